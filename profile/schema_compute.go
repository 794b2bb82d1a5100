package profile

// The experts' compute on one GPU: a roofline per dtype (peak tensor
// throughput and memory bandwidth from the datasheet) with what a grouped
// GEMM achieves of each, its output tile and launch cost, which
// `moebench calibrate --compute` fits from cuBLASLt's grouped GEMMs, one
// set per dtype (the library picks other kernels for each).
var computeDefs = concat([]Def{
	{"gpu.fp8_tflops", "TFLOPS", 1, 1e6, "dense FP8 tensor throughput (without sparsity)"},
	{"gpu.bf16_tflops", "TFLOPS", 1, 1e6, "dense BF16 tensor throughput (without sparsity)"},
	{"gpu.hbm_gbs", "GB/s", 1, 1e6, "device-memory bandwidth, reads and writes together"},
	{"gemm.act_eff", "ratio", 0.01, 1, "share of the memory bandwidth the SwiGLU activation between the projections achieves"},
	{"gemm.act_us", "µs", 0, 1e4, "the activation kernel's fixed cost"},
	{"gemm.beside", "ratio", 1, 10, "a GEMM's slowdown while communication kernels run beside it, beyond having their SMs fewer: what they take of the memory and L2"},
	{"gemm.comm_beside", "ratio", 1, 10, "a communication phase's slowdown while GEMMs run beside it on the SMs it leaves"},
}, roofline("fp8"), roofline("bf16"))

// roofline declares one dtype's grouped-GEMM constants.
func roofline(dt string) []Def {
	p := "gemm." + dt + "."
	return []Def{
		{p + "tile_m", "count", 1, 4096, "tokens an output tile of the " + dt + " grouped GEMM covers: an expert's tokens round up to it"},
		{p + "tile_n", "count", 1, 4096, "output features such a tile covers"},
		{p + "eff", "ratio", 0.01, 1, "share of the " + dt + " peak a wave of full tiles achieves"},
		{p + "mem_eff", "ratio", 0.01, 1, "share of the memory bandwidth the " + dt + " GEMM's weight and token streams achieve"},
		{p + "overlap", "ratio", 0, 1, "how much of the shorter of its compute and memory time the " + dt + " GEMM does not hide behind the longer (0: a perfect roofline; 1: they add)"},
		{p + "launch_us", "µs", 0, 1e4, "the " + dt + " grouped GEMM's fixed cost: launch, prologue, the last wave's tail"},
	}
}
