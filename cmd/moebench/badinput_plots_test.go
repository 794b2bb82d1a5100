package main

// badInputsPlots are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsPlots() []badInput {
	size := []string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--transport", "mini-gda"}
	return []badInput{
		// A study with nothing to draw: no empty chart, no output.
		{name: "plots size nothing modelled", args: append(size, "--max-buffer-gib", "0.0001", "--plot", "p.svg"), code: 1, msg: "--plot p.svg: nothing to draw"},
		{name: "plots size nothing modelled with out", args: append(size, "--max-qps-per-nic", "1", "--plot", "p.png", "--out", "o.txt"), code: 1, msg: "--plot p.png: nothing to draw"},
		{name: "plots validate no measured row", args: []string{"validate", "--measured", "m.json", "--plot", "p.svg", "--out", "o.csv", "--format", "csv"},
			files: fileOf("m.json", `{"issue_ns": {"no-such-mode": 100}}`), code: 1, msg: "--plot p.svg: nothing to draw"},
		{name: "plots validate no positive row", args: []string{"validate", "--measured", "m.json", "--plot", "p.png"},
			files: fileOf("m.json", `{"issue_ns": {"gpu-fence": 0}}`), code: 1, msg: "--plot p.png: nothing to draw"},
	}
}
