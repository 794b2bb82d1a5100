package main

import "strings"

// badInputsSizes are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsSizes() []badInput {
	const trace = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n" +
		`{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2]]}` + "\n" + `{"step":0,"layer":0,"rank":1,"topk_idx":[[3,4]]}` + "\n"
	t := fileOf("t.jsonl", trace)
	return []badInput{
		// Sizes that reach a 32-bit field: a message's bytes, a chunk's
		// tokens, a WQE's basic blocks.
		{name: "sizes run hidden past a message", args: []string{"run", "--hidden", "2147483648"}, code: 2, msg: "--hidden"},
		{name: "sizes run hidden wraps", args: []string{"run", "--hidden", "4294967296"}, code: 2, msg: "--hidden"},
		{name: "sizes run hidden bf16 past a message", args: []string{"run", "--hidden", "1073741824"}, code: 2, msg: "--hidden"},
		{name: "sizes run background write past a message", args: []string{"run", "--background", "bulk:16:shared:2147483648"}, code: 2, msg: "2147483647 B"},
		{name: "sizes run background write wraps", args: []string{"run", "--background", "bulk:16:reserved:4294967296"}, code: 2, msg: "--background"},
		{name: "sizes run normal chunk past a message", args: []string{"run", "--mode", "normal", "--ranks", "8", "--chunk", "4294967296"}, code: 2, msg: "--chunk"},
		{name: "sizes run normal default chunk past a message", args: []string{"run", "--mode", "normal", "--ranks", "8", "--hidden", "268435456"}, code: 2, msg: "--hidden"},
		{name: "sizes sweep normal chunk past a message", args: []string{"sweep", "--mode", "normal", "--ranks", "8,16", "--chunk", "2147483648"}, code: 2, msg: "--chunk"},
		{name: "sizes size hidden past a message", args: []string{"size", "--hidden", "4294967296"}, code: 2, msg: "--hidden"},
		{name: "sizes size normal chunk past a message", args: []string{"size", "--mode", "normal", "--chunk", "4294967296"}, code: 2, msg: "--chunk"},
		{name: "sizes size chunk in ll mode", args: []string{"size", "--chunk", "2147483648"}, code: 2, msg: "--chunk"},
		{name: "sizes size background write past a message", args: []string{"size", "--background", "bulk:16:4294967296"}, code: 2, msg: "--background"},
		{name: "sizes replay hidden past a message", args: []string{"replay", "--trace", "t.jsonl", "--hidden", "2147483648"}, files: t, code: 2, msg: "--hidden"},
		{name: "sizes replay normal chunk past a message", args: []string{"replay", "--trace", "t.jsonl", "--mode", "normal", "--chunk", "4294967296"}, files: t, code: 2, msg: "--chunk"},
		{name: "sizes replay chunk in ll mode", args: []string{"replay", "--trace", "t.jsonl", "--chunk", "4294967296"}, files: t, code: 2, msg: "--chunk"},
		{name: "sizes replay background write past a message", args: []string{"replay", "--trace", "t.jsonl", "--background", "bulk:4:2147483648"}, files: t, code: 2, msg: "--background"},
		// Knob values past what a NIC addresses or the knob declares.
		{name: "sizes run qps per peer past the NIC", args: []string{"run", "--qps-per-peer", "9223372036854775807"}, code: 2, msg: "--qps-per-peer"},
		{name: "sizes size qps per peer past the NIC", args: []string{"size", "--qps-per-peer", "9223372036854775807"}, code: 2, msg: "--qps-per-peer"},
		{name: "sizes size workers past the knob", args: []string{"size", "--workers", "4294967296"}, code: 2, msg: "--workers"},
		{name: "sizes size rings past the knob", args: []string{"size", "--rings", "9223372036854775807"}, code: 2, msg: "--rings"},
		{name: "sizes size batch past the knob", args: []string{"size", "--batch", "4294967296"}, code: 2, msg: "--batch"},
		{name: "sizes run native reps past 32 bits", args: []string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "mini-gda", "--reps", "4294967296"}, code: 2, msg: "--reps"},
		{name: "sizes run native warmup past 32 bits", args: []string{"run", "--engine", "native", "--virtual-ranks", "2", "--transport", "mini-gda", "--warmup", "2147483648"}, code: 2, msg: "--warmup"},

		// mech: a cost estimate before work, and one check for every
		// experiment's values.
		{name: "sizes mech rate over max-memory", args: []string{"mech", "rate", "--threads", "1048576", "--qps", "65536", "--max-memory", "4GiB"}, code: 2, msg: "--threads 1048576"},
		{name: "sizes mech rate payload zero", args: []string{"mech", "rate", "--payload", "0"}, code: 2, msg: "--payload"},
		{name: "sizes mech rate payload negative", args: []string{"mech", "rate", "--payload", "-8"}, code: 2, msg: "--payload"},
		{name: "sizes mech rate sms above the GPU", args: []string{"mech", "rate", "--sms", "1000"}, code: 2, msg: "--sms"},
		{name: "sizes mech rate sms wraps", args: []string{"mech", "rate", "--sms", "4294967296"}, code: 2, msg: "--sms"},
		{name: "sizes mech rate threads past the model", args: []string{"mech", "rate", "--threads", "2147483648"}, code: 2, msg: "--threads"},
		{name: "sizes mech rate depth past a send queue", args: []string{"mech", "rate", "--depth", "4294967296"}, code: 2, msg: "--depth"},
		{name: "sizes mech rate per doorbell past a send queue", args: []string{"mech", "rate", "--per-doorbell", "4294967296", "--depth", "1024"}, code: 2, msg: "--per-doorbell"},
		{name: "sizes mech rate inline megabyte", args: []string{"mech", "rate", "--payload", "1048576"}, code: 2, msg: "--payload"},
		{name: "sizes mech single inline megabyte", args: []string{"mech", "single", "--payload", "1048576"}, code: 2, msg: "--payload"},
		{name: "sizes mech single inline past a WQE", args: []string{"mech", "single", "--payload", "1000"}, code: 2, msg: "--payload"},
		{name: "sizes mech rate payload past a message", args: []string{"mech", "rate", "--pointer", "--payload", "4294967296"}, code: 2, msg: "--payload"},
		{name: "sizes mech payload on a named experiment", args: []string{"mech", "ordering", "--payload", "0"}, code: 2, msg: "--payload"},
		{name: "sizes mech rate flag on single", args: []string{"mech", "single", "--threads", "4"}, code: 2, msg: "--threads"},

		// Float flags: NaN, infinities and values out of range.
		{name: "sizes size tolerance NaN", args: []string{"size", "--tolerance", "NaN"}, code: 2, msg: "--tolerance"},
		{name: "sizes size target-us NaN", args: []string{"size", "--target-us", "NaN"}, code: 2, msg: "--target-us"},
		{name: "sizes size target-us Inf", args: []string{"size", "--target-us", "Inf"}, code: 2, msg: "--target-us"},
		{name: "sizes size max-buffer-gib NaN", args: []string{"size", "--max-buffer-gib", "NaN"}, code: 2, msg: "--max-buffer-gib"},
		{name: "sizes size max-buffer-gib Inf", args: []string{"size", "--max-buffer-gib", "Inf"}, code: 2, msg: "--max-buffer-gib"},
		{name: "sizes size max-buffer-gib past int64", args: []string{"size", "--max-buffer-gib", "1e300"}, code: 2, msg: "--max-buffer-gib"},
		{name: "sizes trace gen drift NaN", args: []string{"trace", "gen", "--out", "t.bin", "--drift", "NaN"}, code: 2, msg: "--drift"},
		{name: "sizes trace gen drift Inf", args: []string{"trace", "gen", "--out", "t.bin", "--drift", "Inf"}, code: 2, msg: "--drift"},

		// A value echoed back is quoted bounded.
		{name: "sizes run tokens of 309 digits", args: []string{"run", "--tokens", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes mech threads list of 309 digits", args: []string{"mech", "rate", "--threads", "1," + digits309}, code: 2, msg: "(311 characters)"},
		{name: "sizes size tolerance of 309 digits", args: []string{"size", "--tolerance", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run unknown flag of 309 digits", args: []string{"run", "--" + digits309}, code: 2, msg: "(311 characters)"},
		{name: "sizes trace gen layers of 309 digits", args: []string{"trace", "gen", "--out", "t.bin", "--layers", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes trace convert unknown flag of 309 digits", args: []string{"trace", "convert", "--" + digits309}, code: 2, msg: "(311 characters)"},
		{name: "sizes run background of 309 digits", args: []string{"run", "--background", "bulk:" + digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run routing of 309 digits", args: []string{"run", "--routing", "powerlaw:" + digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run set of 309 digits", args: []string{"run", "--set", "gpu.sm_clock_mhz=" + digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run max-memory of 309 digits", args: []string{"run", "--max-memory", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes sweep shard of 309 digits", args: []string{"sweep", "--shard", "1/" + digits309}, code: 2, msg: "(311 characters)"},
		{name: "sizes run transport of 309 digits", args: []string{"run", "--transport", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run preset of 309 digits", args: []string{"run", "--preset", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run workload of 309 digits", args: []string{"run", "--workload", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run profile of 309 digits", args: []string{"run", "--profile", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run dtype of 309 digits", args: []string{"run", "--dispatch-dtype", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes sweep ordering of 309 digits", args: []string{"sweep", "--ordering", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes mech style of 309 digits", args: []string{"mech", "rate", "--style", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes unknown command of 309 digits", args: []string{digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run stray argument of 309 digits", args: []string{"run", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes run topology of 309 digits", args: []string{"run", "--topology", digits309}, code: 2, msg: "(309 characters)"},
		{name: "sizes replay layout of 309 digits", args: []string{"replay", "--trace", "t.jsonl", "--layout", digits309}, files: t, code: 2, msg: "(309 characters)"},
	}
}

// digits309 is a number past any flag's range, and long.
var digits309 = strings.Repeat("9", 309)
