package layer

import (
	"moebench/moe"
	"moebench/native"
)

// BesideRunner runs a GEMM beside a layer; *native.Lib implements it.
type BesideRunner interface {
	Runner
	GEMMBeside(native.GEMMConfig, native.LayerConfig, native.LayerRouting) (native.BesideResult, error)
}

// RunBeside is Run with g's GEMM running back to back on the same GPU
// while the layer repeats: what communication and the expert GEMMs do to
// each other when they share the SMs and the memory. It returns the layer
// as Run does and the GEMM's calls timed within the layer's repetitions.
func RunBeside(lib BesideRunner, rt *moe.Routing, tr Transport, o Options, bg moe.Background, g native.GEMMConfig) (*Measurement, native.GEMMResult, error) {
	var gemm native.GEMMResult
	m, err := run(lib, rt, tr, o, bg, func(c native.LayerConfig, r native.LayerRouting) (native.LayerResult, error) {
		res, err := lib.GEMMBeside(g, c, r)
		gemm = res.GEMM
		return res.Layer, err
	})
	return m, gemm, err
}
