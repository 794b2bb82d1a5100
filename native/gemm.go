package native

import "fmt"

// GEMMOp is what GEMM times: a batched matmul or the activation between
// an expert's two matmuls.
type GEMMOp int

const (
	OpMatmul     GEMMOp = iota // out = x · w per expert, one batched cuBLASLt call
	OpActivation               // SwiGLU over [gate | up] rows, BF16
)

// GEMMConfig is one expert group's GEMM: Groups experts of Tokens rows
// each, x[Tokens×K] · w[K×N]. FP8 is E4M3 in and BF16 out with one scale
// a tensor; otherwise BF16 throughout.
type GEMMConfig struct {
	Op                   GEMMOp
	FP8                  bool
	Groups, Tokens, K, N int
	// SMTarget is cuBLASLt's SM count target (0: the library's choice):
	// the SMs a GEMM may plan for while communication holds the others.
	SMTarget            int
	Warmup, Reps, Inner int
	Lib                 string // cuBLASLt's library; "" finds it
}

func (c GEMMConfig) check() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("gemm: %w: %s", ErrBadArgument, fmt.Sprintf(f, a...))
	}
	switch {
	case c.Op != OpMatmul && c.Op != OpActivation:
		return bad("op %d", c.Op)
	case c.Groups < 1 || c.Groups > 1024:
		return bad("%d experts, want 1 to 1,024", c.Groups)
	case c.Tokens < 1 || c.Tokens > 65536:
		return bad("%d tokens an expert, want 1 to 65,536", c.Tokens)
	case c.N < 16 || c.N%16 != 0 || c.N > 65536:
		return bad("n %d, want a multiple of 16 up to 65,536", c.N)
	case c.Op == OpMatmul && (c.K < 16 || c.K%16 != 0 || c.K > 65536):
		return bad("k %d, want a multiple of 16 up to 65,536", c.K)
	case c.SMTarget < 0, c.Warmup < 0, c.Reps < 0, c.Inner < 0:
		return bad("negative SM target, warm-up, repetitions or calls a launch")
	}
	return nil
}

// GEMMResult is a GEMM's time per call, µs, over the timed graph
// launches, with the work one call does.
type GEMMResult struct {
	MeanUs       float64 `json:"mean_us"`
	MinUs        float64 `json:"min_us"`
	MaxUs        float64 `json:"max_us"`
	Flops        float64 `json:"flops"`
	Bytes        float64 `json:"bytes"`
	Calls        int64   `json:"calls"`
	WeightCopies int64   `json:"weight_copies"`
	Version      int     `json:"cublaslt_version,omitempty"`
	Lib          string  `json:"cublaslt_lib,omitempty"`
}

// BesideResult is a GEMM run back to back beside a layer: the GEMM's
// calls timed while the layer repeated, and the layer's own result.
type BesideResult struct {
	GEMM  GEMMResult
	Layer LayerResult
}
