package hw

import (
	"math"

	"moebench/profile"
	"moebench/sim"
)

// GEMMCosts time the experts' compute on one GPU: a grouped GEMM is a
// roofline of its tensor work, counted in whole output tiles and whole
// waves of them over the SMs it has, against the bytes it streams (every
// active expert's weights once, its tokens in and out), plus a fixed cost;
// each dtype has its own, as the library runs other kernels for each.
type GEMMCosts struct {
	SMs        int
	HBM        float64 // B/s
	FP8, BF16  Roofline
	EffAct     float64
	ActFixed   sim.Time
	Beside     float64 // a GEMM beside communication kernels
	CommBeside float64 // a communication phase beside GEMMs
}

// Roofline is one dtype's grouped GEMM.
type Roofline struct {
	Peak         float64 // FLOP/s, dense
	TileM, TileN int
	Eff, MemEff  float64
	Overlap      float64
	Launch       sim.Time
}

// NewGEMMCosts resolves the compute constants of p.
func NewGEMMCosts(p *profile.Profile) GEMMCosts { return GEMMCostsOf(p.Compute()) }

// GEMMCostsOf is the compute of s on the engine's clock.
func GEMMCostsOf(s profile.ComputeSpec) GEMMCosts {
	roof := func(g profile.GEMMSpec) Roofline {
		return Roofline{Peak: g.FLOPsPerSec, TileM: g.TileM, TileN: g.TileN,
			Eff: g.Eff, MemEff: g.MemEff, Overlap: g.Overlap, Launch: sim.Ns(g.LaunchNs)}
	}
	return GEMMCosts{
		SMs:        s.SMs,
		HBM:        s.HBMBytesPerSec,
		FP8:        roof(s.FP8),
		BF16:       roof(s.BF16),
		EffAct:     s.ActEff,
		ActFixed:   sim.Ns(s.ActNs),
		Beside:     s.Beside,
		CommBeside: s.CommBeside,
	}
}

// Of is the roofline of FP8 (fp8) or BF16 GEMMs.
func (c *GEMMCosts) Of(fp8 bool) *Roofline {
	if fp8 {
		return &c.FP8
	}
	return &c.BF16
}

// GEMMWork is one grouped GEMM: for each expert e, Tokens[e] rows of
// x[·×K] times its w[K×N]. An expert without tokens is skipped: its
// weights are not read.
type GEMMWork struct {
	FP8    bool
	Tokens []int
	K, N   int
}

// GEMMTime is a grouped GEMM's time split into its roofline's parts.
type GEMMTime struct {
	Total           sim.Time
	Compute, Memory sim.Time // the tile waves alone, the byte streams alone
	Tiles, Waves    int
	FLOPs, Bytes    float64
	MemoryBound     bool
	ActiveExperts   int
	TokensPerExpert int // the most of any expert
}

// GEMM times w on sms SMs (0: all of them); beside says communication
// kernels hold the other SMs, which costs the Beside slowdown.
func (c *GEMMCosts) GEMM(w GEMMWork, sms int, beside bool) GEMMTime {
	if sms <= 0 || sms > c.SMs {
		sms = c.SMs
	}
	esz, r := 2.0, c.Of(w.FP8)
	if w.FP8 {
		esz = 1
	}
	var t GEMMTime
	rows := 0
	ntiles := ceilDiv(w.N, r.TileN)
	for _, m := range w.Tokens {
		if m <= 0 {
			continue
		}
		t.ActiveExperts++
		t.TokensPerExpert = max(t.TokensPerExpert, m)
		rows += m
		t.Tiles += ceilDiv(m, r.TileM) * ntiles
	}
	if t.ActiveExperts == 0 {
		return t
	}
	t.Waves = ceilDiv(t.Tiles, sms)
	t.FLOPs = 2 * float64(rows) * float64(w.K) * float64(w.N)
	t.Bytes = float64(t.ActiveExperts)*float64(w.K)*float64(w.N)*esz + float64(rows)*float64(w.K)*esz + float64(rows)*float64(w.N)*2
	perSM := r.Peak * r.Eff / float64(c.SMs)
	tile := 2 * float64(r.TileM) * float64(r.TileN) * float64(w.K) / perSM
	compute := float64(t.Waves) * tile
	if t.Tiles < sms {
		// Fewer tiles than SMs: the library splits them along K over the
		// idle SMs, so the work spreads over all of them.
		compute = float64(t.Tiles) / float64(sms) * tile
	}
	memory := t.Bytes / (c.HBM * r.MemEff)
	t.Compute, t.Memory = secs(compute), secs(memory)
	t.MemoryBound = memory >= compute
	total := math.Max(compute, memory) + r.Overlap*math.Min(compute, memory)
	if beside {
		total *= c.Beside
	}
	t.Total = r.Launch + secs(total)
	return t
}

// Activation times the SwiGLU over rows of 2n values in, n out (BF16).
func (c *GEMMCosts) Activation(rows, n int, beside bool) sim.Time {
	if rows <= 0 {
		return 0
	}
	s := float64(rows) * float64(3*n) * 2 / (c.HBM * c.EffAct)
	if beside {
		s *= c.Beside
	}
	return c.ActFixed + secs(s)
}

// FFNTime is one rank's experts' FFN: the up projection (gate and up
// together), the activation and the down projection.
type FFNTime struct {
	Up, Act, Down GEMMTime
	ActTime       sim.Time
	Total         sim.Time
}

// FFN times the experts' FFN of hidden → 2 × inter → hidden over tokens
// per expert, on sms SMs.
func (c *GEMMCosts) FFN(fp8 bool, tokens []int, hidden, inter, sms int, beside bool) FFNTime {
	var f FFNTime
	f.Up = c.GEMM(GEMMWork{FP8: fp8, Tokens: tokens, K: hidden, N: 2 * inter}, sms, beside)
	f.Down = c.GEMM(GEMMWork{FP8: fp8, Tokens: tokens, K: inter, N: hidden}, sms, beside)
	rows := 0
	for _, m := range tokens {
		rows += max(m, 0)
	}
	f.ActTime = c.Activation(rows, inter, beside)
	f.Total = f.Up.Total + f.ActTime + f.Down.Total
	return f
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func secs(s float64) sim.Time { return sim.Ns(s * 1e9) }
