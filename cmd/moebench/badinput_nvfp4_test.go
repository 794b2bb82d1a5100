package main

// badInputsNVFP4 are the cases of NVFP4 dispatch and the dtype flags; see
// TestBadInputs for what each must do.
func badInputsNVFP4() []badInput {
	const trace = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n" +
		`{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2]]}` + "\n" + `{"step":0,"layer":0,"rank":1,"topk_idx":[[3,4]]}` + "\n"
	t := fileOf("t.jsonl", trace)
	// 2,880 (gpt-oss) fills whole 16 B of values but not of block scales.
	const hidden = "--hidden: 2880 nvfp4 channels, want a multiple of 256"
	return []badInput{
		{name: "nvfp4 run combine dtype", args: []string{"run", "--combine-dtype", "nvfp4"}, code: 2, msg: "--combine-dtype nvfp4: a dispatch type only"},
		{name: "nvfp4 run combine dtype fp8", args: []string{"run", "--combine-dtype", "fp8"}, code: 2, msg: "--combine-dtype fp8"},
		{name: "nvfp4 run combine dtype unknown", args: []string{"run", "--combine-dtype", "fp4"}, code: 2, msg: "--combine-dtype"},
		{name: "nvfp4 run dispatch dtype misspelled", args: []string{"run", "--dispatch-dtype", "nvfp"}, code: 2, msg: "--dispatch-dtype"},
		{name: "nvfp4 run hidden not whole units", args: []string{"run", "--dispatch-dtype", "nvfp4", "--hidden", "2880"}, code: 2, msg: hidden},
		{name: "nvfp4 run hidden odd", args: []string{"run", "--dispatch-dtype", "nvfp4", "--hidden", "7"}, code: 2, msg: "--hidden: 7 nvfp4"},
		{name: "nvfp4 sweep hidden not whole units", args: []string{"sweep", "--dispatch-dtype", "nvfp4", "--hidden", "2880", "--ranks", "16,32"}, code: 2, msg: hidden},
		{name: "nvfp4 size hidden not whole units", args: []string{"size", "--dispatch-dtype", "nvfp4", "--hidden", "2880"}, code: 2, msg: hidden},
		{name: "nvfp4 size combine dtype", args: []string{"size", "--combine-dtype", "nvfp4"}, code: 2, msg: "--combine-dtype nvfp4"},
		{name: "nvfp4 replay hidden not whole units", args: []string{"replay", "--trace", "t.jsonl", "--dispatch-dtype", "nvfp4", "--hidden", "2880"}, files: t, code: 2, msg: hidden},
		{name: "nvfp4 replay combine dtype", args: []string{"replay", "--trace", "t.jsonl", "--combine-dtype", "nvfp4"}, files: t, code: 2, msg: "--combine-dtype nvfp4"},
		// The native kernels cast to FP8 or copy BF16: refused before the
		// library loads, on any machine.
		{name: "nvfp4 native engine", args: []string{"run", "--engine", "native", "--gpus", "1", "--dispatch-dtype", "nvfp4"}, code: 2, msg: "--dispatch-dtype nvfp4: the native engine"},
		{name: "nvfp4 native engine combine", args: []string{"run", "--engine", "native", "--gpus", "1", "--combine-dtype", "fp32"}, code: 2, msg: "--combine-dtype fp32: the native engine"},
	}
}
