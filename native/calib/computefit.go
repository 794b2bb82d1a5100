package calib

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// ComputeFit is the compute model fitted to a compute calibration: its
// constants and how well they reproduce every measured GEMM.
type ComputeFit struct {
	Costs hw.GEMMCosts
	// Rows holds each measured row's model time against the measured one.
	Rows []FitRow
	// MaxErr is the largest |model / measured - 1| over the grouped GEMMs
	// the fit is made on (two experts or more, alone on the GPU); MedianErr
	// their median. SingleErr is the largest over one expert's GEMMs,
	// which the fit leaves out: the library picks its kernel for a single
	// GEMM by a heuristic whose choices no smooth model follows (one
	// expert's 384 tokens taking longer than its 512, say).
	MaxErr, MedianErr, SingleErr float64
}

// FitRow is one measurement and the fitted model's time for it, µs.
type FitRow struct {
	GEMMRow
	ModelUs float64 `json:"model_us"`
}

// Ratio is model over measured.
func (r FitRow) Ratio() float64 { return r.ModelUs / r.MeanUs }

// fitted says whether a row is one the GEMM fit is made on.
func (r GEMMRow) fitted() bool { return r.Op != "act" && r.SMTarget == 0 && r.Groups >= 2 }

// tiles the fit tries: the output tiles Hopper's GEMM kernels use.
var (
	tileMs = []int{16, 32, 64, 128, 256}
	tileNs = []int{64, 128, 256}
)

// FitCompute fits the GEMM model to m's rows on base's datasheet peaks
// (gpu.sms, gpu.fp8_tflops, gpu.bf16_tflops, gpu.hbm_gbs): for each dtype
// and every output tile, the efficiencies, the overlap of compute and
// memory and the launch cost that minimize the squared log error over
// the grouped GEMMs; then the activation's bandwidth share and fixed cost,
// and the slowdowns of a GEMM and of communication beside each other.
func FitCompute(m ComputeMeasured, base *profile.Profile) (ComputeFit, error) {
	rows := map[bool][]GEMMRow{}
	var act []GEMMRow
	for _, r := range m.GEMMs {
		if r.MeanUs <= 0 {
			return ComputeFit{}, fmt.Errorf("compute fit: %s %s GEMM of %d × %d tokens has no time", r.DType, r.Op, r.Groups, r.Tokens)
		}
		switch {
		case r.Op == "act":
			act = append(act, r)
		case r.fitted():
			rows[r.DType == "fp8"] = append(rows[r.DType == "fp8"], r)
		}
	}
	if len(rows[true]) < 8 || len(rows[false]) < 8 || len(act) < 2 {
		return ComputeFit{}, errors.New("compute fit: too few measurements (want 8 grouped GEMMs of each dtype and 2 activations at least)")
	}
	c := hw.NewGEMMCosts(base)
	if m.SMs > 0 {
		c.SMs = m.SMs
	}
	for _, fp8 := range []bool{true, false} {
		r := c.Of(fp8)
		best := math.Inf(1)
		var bestR hw.Roofline
		for _, tm := range tileMs {
			for _, tn := range tileNs {
				r.TileM, r.TileN = tm, tn
				x, v := nelderMead(func(x []float64) float64 { return gemmLoss(c, fp8, x, rows[fp8]) }, []float64{0.7, 0.85, 0.3, 5})
				if v < best {
					best, bestR = v, with(*r, x)
				}
			}
		}
		*r = bestR
	}
	fitActivation(&c, act)
	c.Beside, c.CommBeside = fitBeside(m.Beside)
	f := ComputeFit{Costs: c}
	var errs []float64
	for _, r := range m.GEMMs {
		fr := FitRow{GEMMRow: r, ModelUs: modelUs(c, r)}
		f.Rows = append(f.Rows, fr)
		e := math.Abs(fr.Ratio() - 1)
		switch {
		case r.fitted():
			errs = append(errs, e)
		case r.Op != "act" && r.SMTarget == 0:
			f.SingleErr = max(f.SingleErr, e)
		}
	}
	slices.Sort(errs)
	f.MaxErr, f.MedianErr = errs[len(errs)-1], errs[len(errs)/2]
	return f, nil
}

// with is r with the fitted parameters x: efficiency, memory efficiency,
// overlap, launch µs.
func with(r hw.Roofline, x []float64) hw.Roofline {
	r.Eff, r.MemEff, r.Overlap, r.Launch = x[0], x[1], x[2], sim.Ns(x[3]*1000)
	return r
}

// gemmLoss is the mean squared log error of the model with parameters x
// (see with) for the dtype's rows; outside the constants' ranges it is
// infinite.
func gemmLoss(c hw.GEMMCosts, fp8 bool, x []float64, rows []GEMMRow) float64 {
	if !(x[0] >= 0.01 && x[0] <= 1 && x[1] >= 0.01 && x[1] <= 1 && x[2] >= 0 && x[2] <= 1 && x[3] >= 0 && x[3] <= 1e4) {
		return math.Inf(1)
	}
	r := c.Of(fp8)
	*r = with(*r, x)
	var sum float64
	for _, row := range rows {
		d := math.Log(modelUs(c, row) / row.MeanUs)
		sum += d * d
	}
	return sum / float64(len(rows))
}

// modelUs is the model's time for a measured row.
func modelUs(c hw.GEMMCosts, r GEMMRow) float64 {
	tokens := make([]int, r.Groups)
	for i := range tokens {
		tokens[i] = r.Tokens
	}
	if r.Op == "act" {
		return c.Activation(r.Groups*r.Tokens, r.N, false).Us()
	}
	return c.GEMM(hw.GEMMWork{FP8: r.DType == "fp8", Tokens: tokens, K: r.K, N: r.N}, r.SMTarget, false).Total.Us()
}

// fitActivation sets the activation's bandwidth share and fixed cost that
// minimize the squared log error of time against bytes (relative, so
// that the launch-bound small rows count as much as the large).
func fitActivation(c *hw.GEMMCosts, rows []GEMMRow) {
	loss := func(x []float64) float64 {
		if !(x[0] >= 0.01 && x[0] <= 1 && x[1] >= 0 && x[1] <= 1e4) {
			return math.Inf(1)
		}
		var sum float64
		for _, r := range rows {
			d := math.Log((x[1] + r.Bytes/(c.HBM*x[0])*1e6) / r.MeanUs)
			sum += d * d
		}
		return sum
	}
	x, _ := nelderMead(loss, []float64{0.5, 2})
	c.EffAct, c.ActFixed = x[0], sim.Ns(x[1]*1000)
}

// fitBeside is the mean slowdown of the GEMMs measured beside a layer
// against the same GEMM alone on as many SMs, and of the layer's phases
// beside the GEMM against alone; 1 without such rows.
func fitBeside(rows []BesideRow) (gemm, comm float64) {
	var g, c []float64
	for _, r := range rows {
		if r.BesideUs > 0 && r.GEMM.MeanUs > 0 {
			g = append(g, r.BesideUs/r.GEMM.MeanUs)
		}
		for _, p := range [][2]float64{{r.DispatchBy, r.DispatchUs}, {r.CombineBy, r.CombineUs}} {
			if p[0] > 0 && p[1] > 0 {
				c = append(c, p[0]/p[1])
			}
		}
	}
	mean := func(v []float64) float64 {
		if len(v) == 0 {
			return 1
		}
		var s float64
		for _, x := range v {
			s += x
		}
		return max(1, s/float64(len(v)))
	}
	return mean(g), mean(c)
}

// nelderMead minimizes f from x0 (a few hundred evaluations; the
// parameters are of order one, so one step size fits them all).
func nelderMead(f func([]float64) float64, x0 []float64) ([]float64, float64) {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	for i := range pts {
		pts[i] = slices.Clone(x0)
		if i > 0 {
			pts[i][i-1] += 0.1 * max(1, math.Abs(x0[i-1]))
		}
		vals[i] = f(pts[i])
	}
	for iter := 0; iter < 400*n; iter++ {
		idx := make([]int, n+1)
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(vals[a], vals[b]) })
		best, worst, second := idx[0], idx[n], idx[n-1]
		if math.Abs(vals[worst]-vals[best]) < 1e-12 {
			break
		}
		cen := make([]float64, n)
		for _, i := range idx[:n] {
			for j := range cen {
				cen[j] += pts[i][j] / float64(n)
			}
		}
		at := func(t float64) []float64 {
			p := make([]float64, n)
			for j := range p {
				p[j] = cen[j] + t*(pts[worst][j]-cen[j])
			}
			return p
		}
		r := at(-1)
		fr := f(r)
		switch {
		case fr < vals[best]:
			if e := at(-2); f(e) < fr {
				pts[worst], vals[worst] = e, f(e)
			} else {
				pts[worst], vals[worst] = r, fr
			}
		case fr < vals[second]:
			pts[worst], vals[worst] = r, fr
		default:
			if k := at(0.5); f(k) < vals[worst] {
				pts[worst], vals[worst] = k, f(k)
				continue
			}
			for _, i := range idx[1:] {
				for j := range pts[i] {
					pts[i][j] = pts[best][j] + 0.5*(pts[i][j]-pts[best][j])
				}
				vals[i] = f(pts[i])
			}
		}
	}
	b := 0
	for i := range vals {
		if vals[i] < vals[b] {
			b = i
		}
	}
	return pts[b], vals[b]
}

// Constants are the fit as profile constants: the GEMM model's, each
// saying what it was fitted from.
func (f ComputeFit) Constants(m ComputeMeasured) []profile.Constant {
	c := f.Costs
	k := func(name string, v float64, unit, source string) profile.Constant {
		return profile.Constant{Name: name, Value: v, Unit: unit, Kind: profile.KindFit, Source: source}
	}
	var out []profile.Constant
	for _, dt := range []string{"fp8", "bf16"} {
		r := c.Of(dt == "fp8")
		n, worst := 0, 0.0
		gLo, gHi, tLo, tHi := math.MaxInt, 0, math.MaxInt, 0
		for _, row := range f.Rows {
			if row.fitted() && row.DType == dt {
				n++
				worst = max(worst, math.Abs(row.Ratio()-1))
				gLo, gHi, tLo, tHi = min(gLo, row.Groups), max(gHi, row.Groups), min(tLo, row.Tokens), max(tHi, row.Tokens)
			}
		}
		src := fmt.Sprintf("fit: moebench calibrate --compute on %s (driver %s, CUDA %s): %d cuBLASLt grouped %s GEMMs of %d to %d experts × %d to %d tokens, the model within %.1f%% of each",
			m.GPU, m.Driver, m.CUDA, n, strings.ToUpper(dt), gLo, gHi, tLo, tHi, 100*worst)
		p := "gemm." + dt + "."
		out = append(out,
			k(p+"tile_m", float64(r.TileM), "count", src),
			k(p+"tile_n", float64(r.TileN), "count", src),
			k(p+"eff", round(r.Eff, 4), "ratio", src),
			k(p+"mem_eff", round(r.MemEff, 4), "ratio", src),
			k(p+"overlap", round(r.Overlap, 4), "ratio", src),
			k(p+"launch_us", round(r.Launch.Us(), 3), "µs", src))
	}
	act := fmt.Sprintf("fit: moebench calibrate --compute on %s, the SwiGLU kernel's time against its bytes", m.GPU)
	bes := fmt.Sprintf("fit: moebench calibrate --compute on %s, %d GEMMs timed beside a normal-mode layer against alone", m.GPU, len(m.Beside))
	return append(out,
		k("gemm.act_eff", round(c.EffAct, 4), "ratio", act),
		k("gemm.act_us", round(c.ActFixed.Us(), 3), "µs", act),
		k("gemm.beside", round(c.Beside, 4), "ratio", bes+" on as many SMs"),
		k("gemm.comm_beside", round(c.CommBeside, 4), "ratio", bes+": its dispatch and combine beside the GEMMs against alone"))
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
