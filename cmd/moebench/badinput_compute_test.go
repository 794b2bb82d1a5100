package main

// badInputsCompute are the cases of --overlap and --layers, and of
// calibrate --compute; see TestBadInputs for what each must do.
func badInputsCompute() []badInput {
	small := []string{"--ranks", "16", "--tokens", "8", "--transport", "mini-gda"}
	run := func(args ...string) []string { return append(append([]string{"run"}, small...), args...) }
	const jsonlTrace = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":256,"top_k":8,"layers":1,"ep_size":1}` + "\n" +
		`{"step":0,"layer":0,"rank":0,"topk_idx":[[0,1,2,3,4,5,6,7]]}` + "\n"
	return []badInput{
		{name: "compute overlap unknown", args: run("--overlap", "tbo"), code: 2, msg: "--overlap tbo: want none, shared-expert, two-batch, hook"},
		{name: "compute overlap twice", args: run("--overlap", "none,hook,none"), code: 2, msg: "--overlap: none twice"},
		{name: "compute size several overlaps", args: []string{"size", "--ranks", "16", "--transport", "mini-gda", "--overlap", "none,hook"}, code: 2, msg: "--overlap none,hook: this command takes one schedule"},
		{name: "compute overlap empty", args: run("--overlap", ""), code: 2, msg: "--overlap"},
		{name: "compute layers without overlap", args: run("--layers", "61"), code: 2, msg: "--layers: only with --overlap"},
		{name: "compute layers zero", args: run("--overlap", "none", "--layers", "0"), code: 2, msg: "--layers 0: want 1 to 1,000"},
		{name: "compute layers past the bound", args: run("--overlap", "none", "--layers", "5000"), code: 2, msg: "--layers 5000"},
		{name: "compute hook in normal mode", args: run("--overlap", "hook", "--mode", "normal"), code: 2, msg: "--overlap hook: the receive hook is DeepEP's low-latency mode's"},
		{name: "compute workload without an FFN", args: run("--overlap", "none", "--workload", "deepep-ll", "--experts", "256"), code: 2, msg: "--overlap: workload deepep-ll has no expert FFN"},
		{name: "compute two-batch of one token", args: []string{"run", "--ranks", "16", "--tokens", "1", "--transport", "mini-gda", "--overlap", "two-batch"}, code: 2, msg: "1 token a rank cannot split into two micro-batches"},
		{name: "compute with the native engine", args: []string{"run", "--engine", "native", "--transport", "mini-gda", "--overlap", "none"}, code: 2, msg: "--overlap: the native engine times communication alone"},
		{name: "compute size overlap unknown", args: []string{"size", "--ranks", "16", "--transport", "mini-gda", "--overlap", "tbo"}, code: 2, msg: "--overlap tbo"},
		{name: "compute size layers is run's", args: []string{"size", "--ranks", "16", "--transport", "mini-gda", "--overlap", "none", "--layers", "4"}, code: 2, msg: "--layers"},
		{name: "compute replay hook in normal mode", args: []string{"replay", "--trace", "t.jsonl", "--mode", "normal", "--overlap", "hook"}, files: fileOf("t.jsonl", jsonlTrace), code: 2, msg: "--overlap hook"},
		{name: "compute calibrate with layer", args: []string{"calibrate", "--compute", "--layer"}, code: 2, msg: "--layer and --compute"},
		{name: "compute calibrate raw missing", args: []string{"calibrate", "--compute", "--from-raw", "nope.json"}, code: 1, msg: "nope.json"},
		{name: "compute calibrate raw not JSON", args: []string{"calibrate", "--compute", "--from-raw", "raw.json"}, files: fileOf("raw.json", "{not json"), code: 1, msg: "--from-raw raw.json"},
		{name: "compute calibrate raw too few", args: []string{"calibrate", "--compute", "--from-raw", "raw.json"}, files: fileOf("raw.json", `{"gpu":"x","gemms":[]}`), code: 1, msg: "too few measurements"},
	}
}
