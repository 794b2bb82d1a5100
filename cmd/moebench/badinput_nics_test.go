package main

// badInputsNICs are the cases of several NICs or planes per GPU; see
// TestBadInputs for what each must do.
func badInputsNICs() []badInput {
	small := []string{"--ranks", "8", "--gpus-per-node", "4", "--experts", "32", "--tokens", "16"}
	both := []string{"--set", "topo.gpus_per_nic=2", "--set", "topo.nics_per_gpu=2"}
	return []badInput{
		{name: "nics run shared and several NICs", args: append(append([]string{"run"}, small...), both...), code: 2, msg: "topo.nics_per_gpu 2"},
		{name: "nics size shared and several NICs", args: append(append([]string{"size"}, small...), both...), code: 2, msg: "topo.gpus_per_nic 2"},
		{name: "nics run planes out of range", args: append([]string{"run", "--set", "topo.planes_per_nic=8"}, small...), code: 2, msg: "topo.planes_per_nic"},
		{name: "nics run NICs zero", args: append([]string{"run", "--set", "topo.nics_per_gpu=0"}, small...), code: 2, msg: "topo.nics_per_gpu"},
		// nic.max_qps holds per NIC: 16 ranks × 16 QPs a peer over 4 NICs
		// is 64 a NIC, over 50 (and 100 would run).
		{name: "nics run QPs over a NIC's", args: []string{"run", "--transport", "mini-gda", "--ranks", "16", "--set", "nic.max_qps=50", "--set", "topo.nics_per_gpu=4"}, code: 2, msg: "64 QPs per NIC (16 ranks × 16 per peer over 4 NICs a GPU)"},
	}
}
