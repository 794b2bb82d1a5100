package profile

// The experts' compute on one GPU: a roofline per dtype (peak tensor
// throughput and memory bandwidth from the datasheet) with the efficiency
// a grouped GEMM achieves of each, its output tile and launch cost, which
// `moebench calibrate --compute` fits from cuBLASLt's grouped GEMMs.
var computeDefs = []Def{
	{"gpu.fp8_tflops", "TFLOPS", 1, 1e6, "dense FP8 tensor throughput (without sparsity)"},
	{"gpu.bf16_tflops", "TFLOPS", 1, 1e6, "dense BF16 tensor throughput (without sparsity)"},
	{"gpu.hbm_gbs", "GB/s", 1, 1e6, "device-memory bandwidth, reads and writes together"},
	{"gemm.tile_m", "count", 1, 4096, "tokens an output tile of the grouped GEMM covers: an expert's tokens round up to it"},
	{"gemm.tile_n", "count", 1, 4096, "output features an output tile covers"},
	{"gemm.fp8_eff", "ratio", 0.01, 1, "share of the FP8 peak a wave of full tiles achieves"},
	{"gemm.bf16_eff", "ratio", 0.01, 1, "share of the BF16 peak a wave of full tiles achieves"},
	{"gemm.mem_eff", "ratio", 0.01, 1, "share of the memory bandwidth a grouped GEMM's weight and activation streams achieve"},
	{"gemm.overlap", "ratio", 0, 1, "how much of the shorter of a GEMM's compute and memory time it does not hide behind the longer (0: a perfect roofline; 1: they add)"},
	{"gemm.launch_us", "µs", 0, 1e4, "a grouped GEMM's fixed cost: launch, prologue, the last wave's tail"},
	{"gemm.act_eff", "ratio", 0.01, 1, "share of the memory bandwidth the SwiGLU activation between the projections achieves"},
	{"gemm.act_us", "µs", 0, 1e4, "the activation kernel's fixed cost"},
	{"gemm.beside", "ratio", 1, 10, "a GEMM's slowdown while communication kernels run beside it, beyond having their SMs fewer: what they take of the memory and L2"},
}
