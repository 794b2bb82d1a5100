package main

// badInputsLimits are refusals of the limits a deployment is held to and
// of --over-limit.
func badInputsLimits() []badInput {
	return []badInput{
		{name: "limits run over-limit unknown", args: []string{"run", "--over-limit", "nic.max_qpz"}, code: 2, msg: `--over-limit "nic.max_qpz": unknown limit`},
		{name: "limits run over-limit empty", args: []string{"run", "--over-limit", ""}, code: 2, msg: "--over-limit: empty limit name"},
		{name: "limits run over-limit one of two unknown", args: []string{"run", "--over-limit", "nic.max_qps,deepep-v9.normal_ranks"}, code: 2, msg: `"deepep-v9.normal_ranks"`},
		{name: "limits sweep over-limit unknown", args: []string{"sweep", "--tokens", "8,16", "--over-limit", "ranks"}, code: 2, msg: `--over-limit "ranks"`},
		{name: "limits run over-limit native", args: []string{"run", "--engine", "native", "--over-limit", "nic.max_qps"}, code: 2, msg: "--over-limit: only with --engine model"},
		{name: "limits size takes no over-limit", args: []string{"size", "--over-limit", "nic.max_qps"}, code: 2, msg: "--over-limit"},
		{name: "limits run deepep-v1 normal past its rank cap", args: []string{"run", "--preset", "deepep-v1", "--mode", "normal", "--ranks", "256", "--tokens", "8"}, code: 2, msg: "deepep-v1.normal_ranks: 256 ranks, more than 160"},
		{name: "limits run deepep-v1 LL past its top-k", args: []string{"run", "--preset", "deepep-v1", "--topk", "12", "--tokens", "8"}, code: 2, msg: "deepep-v1.ll_topk: 12 top-k, more than 11"},
		{name: "limits run queue deeper than the NIC's", args: []string{"run", "--transport", "mini-gda", "--tokens", "8", "--set", "nic.max_qp_wr=512"}, code: 2, msg: "nic.max_qp_wr = 512"},
		{name: "limits run reserved memory negative", args: []string{"run", "--set", "gpu.reserved_gb=-1"}, code: 2, msg: "gpu.reserved_gb"},
		{name: "limits run buffers past what the model leaves", args: []string{"run", "--transport", "mini-gda", "--tokens", "8", "--set", "gpu.reserved_gb=140.9"}, code: 2, msg: "left (gpu.memory_gb = 141"},
	}
}
