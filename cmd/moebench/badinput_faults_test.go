package main

// badInputsFaults are the cases of --fault and its companions on run,
// sweep and replay; see TestBadInputs for what each must do.
func badInputsFaults() []badInput {
	small := []string{"--ranks", "16", "--tokens", "8", "--transport", "mini-gda"}
	run := func(args ...string) []string { return append(append([]string{"run"}, small...), args...) }
	sweep := func(args ...string) []string { return append(append([]string{"sweep"}, small...), args...) }
	const trace = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n" +
		`{"step":0,"layer":0,"rank":0,"ids":[[0,1],[2,3]]}` + "\n" + `{"step":0,"layer":0,"rank":1,"ids":[[4,5],[6,7]]}` + "\n"
	return []badInput{
		{name: "faults run unknown kind", args: run("--fault", "drop:1e-4"), code: 2, msg: `--fault: bad fault "drop:1e-4": kind "drop"`},
		{name: "faults run no value", args: run("--fault", "loss"), code: 2, msg: `--fault: bad fault "loss"`},
		{name: "faults run loss above one", args: run("--fault", "loss:2"), code: 2, msg: "--fault: bad fault \"loss:2\": rate 2"},
		{name: "faults run loss not a number", args: run("--fault", "loss:lots"), code: 2, msg: `rate "lots" is not a number`},
		{name: "faults run loss class unknown", args: run("--fault", "loss:1e-4@nvlink"), code: 2, msg: `link class "nvlink"`},
		{name: "faults run slow factor below one", args: run("--fault", "slow:3:0.5"), code: 2, msg: `factor "0.5"`},
		{name: "faults run slow rank twice", args: run("--fault", "slow:3:2", "--fault", "slow:3:4"), code: 2, msg: "rank 3 is slow twice"},
		{name: "faults run slow rank past the layer", args: run("--fault", "slow:16:2"), code: 2, msg: "--fault: slow rank 16: the layer has 16 ranks"},
		{name: "faults run link rank past the layer", args: run("--fault", "link:99:0.5"), code: 2, msg: "--fault: link of rank 99"},
		{name: "faults run flap without a span", args: run("--fault", "flap:3:50us"), code: 2, msg: "flap:RANK:AT+FOR"},
		{name: "faults run flap unit unknown", args: run("--fault", "flap:3:50us+2h"), code: 2, msg: `unit "h"`},
		{name: "faults run spine factor zero", args: run("--fault", "spine:0"), code: 2, msg: "factor 0"},
		{name: "faults run fault seed not a number", args: run("--fault", "loss:1e-4", "--fault-seed", "x"), code: 2, msg: "--fault-seed"},
		{name: "faults run seeds is sweep's", args: run("--fault", "loss:1e-4", "--seeds", "4"), code: 2, msg: "--seeds"},
		{name: "faults run with the native engine", args: []string{"run", "--engine", "native", "--transport", "mini-gda", "--fault", "loss:1e-4"}, code: 2, msg: "--fault: only with --engine model"},
		{name: "faults sweep seeds without a fault", args: sweep("--seeds", "8"), code: 2, msg: "--seeds: a healthy layer is deterministic"},
		{name: "faults sweep seeds zero", args: sweep("--fault", "loss:1e-4", "--seeds", "0"), code: 2, msg: "--seeds 0"},
		{name: "faults sweep seeds past the bound", args: sweep("--fault", "loss:1e-4", "--seeds", "20000"), code: 2, msg: "--seeds 20000"},
		{name: "faults sweep seeds with a fault seed", args: sweep("--fault", "loss:1e-4", "--seeds", "4", "--fault-seed", "3"), code: 2, msg: "--fault-seed"},
		{name: "faults sweep seeds sharded", args: sweep("--fault", "loss:1e-4", "--seeds", "4", "--shard", "1/2", "--format", "json"), code: 2, msg: "--shard"},
		{name: "faults sweep loss negative", args: sweep("--loss", "0,-1e-4"), code: 2, msg: "--loss -0.0001"},
		{name: "faults sweep loss of one", args: sweep("--loss", "1"), code: 2, msg: "--loss 1"},
		{name: "faults sweep loss not a number", args: sweep("--loss", "some"), code: 2, msg: "--loss"},
		{name: "faults replay slow rank past the trace's", args: []string{"replay", "--trace", "t.jsonl", "--transport", "mini-gda", "--fault", "slow:2:2"},
			files: fileOf("t.jsonl", trace), code: 2, msg: "--fault: slow rank 2: the layer has 2 ranks"},
		{name: "faults replay bad spec", args: []string{"replay", "--trace", "t.jsonl", "--fault", "slow:x:2"},
			files: fileOf("t.jsonl", trace), code: 2, msg: `--fault: bad fault "slow:x:2"`},
	}
}
