package hw_test

import (
	"math"
	"testing"

	"moebench/hw"
	"moebench/sim"
)

// costs is a GPU of round numbers: 100 SMs, 1,000 TFLOPS FP8 and 500
// BF16, 4,000 GB/s, tiles of 64 × 128, half of every peak achieved.
func costs() hw.GEMMCosts {
	r := hw.Roofline{TileM: 64, TileN: 128, Eff: 0.5, MemEff: 0.5, Launch: 2 * sim.Microsecond}
	fp8, bf16 := r, r
	fp8.Peak, bf16.Peak = 1000e12, 500e12
	return hw.GEMMCosts{SMs: 100, HBM: 4000e9, FP8: fp8, BF16: bf16, EffAct: 0.5, ActFixed: 3 * sim.Microsecond, Beside: 1.25}
}

func near(t *testing.T, what string, got sim.Time, wantUs float64) {
	t.Helper()
	if math.Abs(got.Us()-wantUs) > 1e-3*max(1, wantUs) {
		t.Errorf("%s = %.4f µs, want %.4f", what, got.Us(), wantUs)
	}
}

func TestGEMMRoofline(t *testing.T) {
	c := costs()
	// One FP8 expert, 1 token, 8,192 × 8,192: 64 × 1 tiles, one wave.
	// Weights 64 MiB + 8 KiB in + 16 KiB out over 2,000 GB/s (33.6 µs)
	// against a tile's 2·64·128·8192 FLOP over 5 TFLOP/s per SM (26.8).
	g := c.GEMM(hw.GEMMWork{FP8: true, Tokens: []int{1}, K: 8192, N: 8192}, 0, false)
	mem := (8192*8192 + 8192 + 16384) / 2000e9 * 1e6
	tile := 2 * 64 * 128 * 8192 / 5e12 * 1e6
	if g.Tiles != 64 || g.Waves != 1 || !g.MemoryBound {
		t.Errorf("tiles %d waves %d memory-bound %v, want 64, 1, true", g.Tiles, g.Waves, g.MemoryBound)
	}
	near(t, "1-token FP8", g.Total, 2+math.Max(mem, tile))

	// Four BF16 experts of 1,000 tokens, 4,096 × 2,048: 16 tiles of
	// tokens × 16 of features each, 1,024 tiles, 11 waves over 100 SMs.
	tokens := []int{1000, 1000, 1000, 1000}
	g = c.GEMM(hw.GEMMWork{Tokens: tokens, K: 4096, N: 2048}, 0, false)
	tile = 2 * 64 * 128 * 4096 / 2.5e12 * 1e6
	if g.Tiles != 1024 || g.Waves != 11 || g.MemoryBound {
		t.Errorf("tiles %d waves %d memory-bound %v, want 1024, 11, false", g.Tiles, g.Waves, g.MemoryBound)
	}
	near(t, "4 × 1,000 BF16", g.Total, 2+11*tile)
	// On 50 SMs beside communication: 21 waves, 1.25 times as long.
	g = c.GEMM(hw.GEMMWork{Tokens: tokens, K: 4096, N: 2048}, 50, true)
	near(t, "on 50 SMs beside", g.Total, 2+1.25*21*tile)

	// An expert without tokens reads no weights and runs no tile.
	g = c.GEMM(hw.GEMMWork{FP8: true, Tokens: []int{0, 1}, K: 1024, N: 1024}, 0, false)
	if g.ActiveExperts != 1 || g.Tiles != 8 {
		t.Errorf("idle expert counted: %d active, %d tiles", g.ActiveExperts, g.Tiles)
	}
	if g := c.GEMM(hw.GEMMWork{Tokens: []int{0, 0}, K: 1024, N: 1024}, 0, false); g.Total != 0 {
		t.Errorf("no tokens took %v", g.Total)
	}
}

func TestGEMMOverlapAddsTheShorterPart(t *testing.T) {
	c := costs()
	c.FP8.Overlap = 1
	g := c.GEMM(hw.GEMMWork{FP8: true, Tokens: []int{1}, K: 8192, N: 8192}, 0, false)
	mem := (8192*8192 + 8192 + 16384) / 2000e9 * 1e6
	tile := 2 * 64 * 128 * 8192 / 5e12 * 1e6
	// 64 tiles on 100 SMs: split along K over all of them.
	near(t, "compute and memory added", g.Total, 2+mem+0.64*tile)
}

func TestFFN(t *testing.T) {
	c := costs()
	f := c.FFN(true, []int{10, 0, 30}, 1024, 512, 0, false)
	up := c.GEMM(hw.GEMMWork{FP8: true, Tokens: []int{10, 0, 30}, K: 1024, N: 1024}, 0, false)
	down := c.GEMM(hw.GEMMWork{FP8: true, Tokens: []int{10, 0, 30}, K: 512, N: 1024}, 0, false)
	// SwiGLU: 40 rows of 1,024 BF16 in and 512 out, over 2,000 GB/s.
	act := 3 + 40*3*512*2/2000e9*1e6
	near(t, "activation", f.ActTime, act)
	near(t, "FFN", f.Total, up.Total.Us()+act+down.Total.Us())
}

func BenchmarkFFN(b *testing.B) {
	c := costs()
	tokens := make([]int, 32)
	for i := range tokens {
		tokens[i] = 100 + i
	}
	b.ReportAllocs()
	for b.Loop() {
		c.FFN(true, tokens, 7168, 2048, 108, true)
	}
}
