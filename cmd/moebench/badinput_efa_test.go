package main

// badInputsEFA are the cases of EFA's SRD mechanism and its presets; see
// TestBadInputs for what each must do.
func badInputsEFA() []badInput {
	small := []string{"--ranks", "16", "--tokens", "16"}
	efa := func(args ...string) []string {
		return append(append([]string{args[0], "--profile", "p-b200-efa"}, args[1:]...), small...)
	}
	return []badInput{
		{name: "efa run on a host without EFA", args: append([]string{"run", "--preset", "deepep-v2-efa"}, small...), code: 2, msg: "efa.generation 0"},
		{name: "efa run RC on an EFA host", args: []string{"run", "--profile", "p-b200-efa", "--ranks", "16", "--transport", "mini-gda"}, code: 2,
			msg: "mini-gda: profile p-b200-efa is an EFA host (efa.generation 4): EFA has no RC queue pairs"},
		{name: "efa size proxy on an EFA host", args: []string{"size", "--profile", "p-b200-efa", "--ranks", "16", "--preset", "uccl-ep"}, code: 2,
			msg: "EFA has no RC queue pairs"},
		{name: "efa run EFA switched off", args: efa("run", "--transport", "srd", "--set", "efa.generation=0"), code: 2, msg: "profile p-b200-efa has no EFA"},
		{name: "efa run SRD QPs zero", args: efa("run", "--preset", "deepep-v2-efa", "--srd-qps", "0"), code: 2, msg: "--srd-qps 0"},
		{name: "efa run SRD QPs past the bound", args: efa("run", "--preset", "deepep-v2-efa", "--srd-qps", "1000"), code: 2, msg: "--srd-qps 1000"},
		{name: "efa size SRD QPs zero", args: efa("size", "--preset", "uccl-ep-efa", "--srd-qps", "0"), code: 2, msg: "--srd-qps 0"},
		{name: "efa run workers on a GPU-posted preset", args: efa("run", "--preset", "deepep-v2-efa", "--workers", "4"), code: 2, msg: "--workers applies to a proxy-posted preset"},
		{name: "efa run fewer rings than workers", args: efa("run", "--preset", "uccl-ep-efa", "--workers", "4", "--rings", "2"), code: 2, msg: "2 rings for 4 workers"},
		{name: "efa run timeout below a round trip", args: efa("run", "--preset", "uccl-ep-efa", "--set", "efa.rto_us=1"), code: 2, msg: "efa.rto_us 1"},
	}
}
