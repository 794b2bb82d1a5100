package main

// badInputsDomains are the cases of NVLink domains that span hosts; see
// TestBadInputs for what each must do.
func badInputsDomains() []badInput {
	return []badInput{
		{name: "domain ranks not whole racks", args: []string{"run", "--profile", "p-gb200", "--ranks", "100", "--gpus-per-node", "4", "--experts", "300"},
			code: 2, msg: "--ranks: 100 ranks do not fill whole NVLink domains of 72 GPUs (give a multiple of 72 ranks, or an NVLink domain of 20: 5 domains of 20 GPUs)"},
		{name: "domain not whole nodes", args: []string{"run", "--ranks", "16", "--set", "nvlink.domain_gpus=6"},
			code: 2, msg: "nvlink domain: 6 GPUs (nvlink.domain_gpus of profile p-ib) is not a whole number of nodes of 8 GPUs"},
		{name: "domain not whole nodes in a sweep", args: []string{"sweep", "--ranks", "16", "--set", "nvlink.domain_gpus=8,12"},
			code: 2, msg: "nvlink domain: 12 GPUs (nvlink.domain_gpus of profile p-ib) is not a whole number of nodes of 8 GPUs"},
		{name: "domain size not whole racks", args: []string{"size", "--profile", "p-gb200", "--ranks", "96", "--gpus-per-node", "4", "--experts", "288"},
			code: 2, msg: "--ranks: 96 ranks do not fill whole NVLink domains of 72 GPUs"},
		{name: "domain fractional", args: []string{"run", "--set", "nvlink.domain_gpus=8.5"},
			code: 2, msg: "nvlink.domain_gpus"},
		{name: "domain normal mode too large", args: []string{"run", "--mode", "normal", "--ranks", "512", "--gpus-per-node", "4", "--experts", "512", "--tokens", "64", "--set", "nvlink.domain_gpus=256"},
			code: 2, msg: "nvlink domain: 256 GPUs, internode normal mode models at most 128 a domain"},
	}
}
