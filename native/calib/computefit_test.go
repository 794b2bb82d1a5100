package calib_test

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"moebench/hw"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/sim"
)

// synthetic measures every row of a full compute sweep on a GPU that is
// exactly the model with known constants.
func synthetic(truth hw.GEMMCosts) calib.ComputeMeasured {
	m := calib.ComputeMeasured{GPU: "synthetic", SMs: truth.SMs}
	for _, r := range calib.GEMMRows(calib.ComputeOptions{Hidden: 7168, Intermediate: 2048}) {
		tokens := make([]int, r.Groups)
		for i := range tokens {
			tokens[i] = r.Tokens
		}
		var us float64
		if r.Op == "act" {
			rows := r.Groups * r.Tokens
			r.Bytes = float64(rows) * float64(3*r.N) * 2
			us = truth.Activation(rows, r.N, false).Us()
		} else {
			us = truth.GEMM(hw.GEMMWork{FP8: r.DType == "fp8", Tokens: tokens, K: r.K, N: r.N}, 0, false).Total.Us()
		}
		r.GEMMResult = native.GEMMResult{MeanUs: us, Bytes: r.Bytes}
		m.GEMMs = append(m.GEMMs, r)
	}
	m.Beside = []calib.BesideRow{
		{GEMM: calib.GEMMRow{GEMMResult: native.GEMMResult{MeanUs: 100}}, BesideUs: 110, DispatchUs: 100, DispatchBy: 150, CombineUs: 100, CombineBy: 130},
		{GEMM: calib.GEMMRow{GEMMResult: native.GEMMResult{MeanUs: 200}}, BesideUs: 240, DispatchUs: 200, DispatchBy: 260, CombineUs: 100, CombineBy: 140},
	}
	return m
}

func TestFitComputeRecoversTheModel(t *testing.T) {
	base := profile.MustLoad("p-ib")
	truth := hw.NewGEMMCosts(base)
	truth.FP8.TileM, truth.FP8.TileN, truth.BF16.TileM, truth.BF16.TileN = 128, 128, 64, 256
	truth.FP8.Eff, truth.FP8.MemEff, truth.FP8.Overlap, truth.FP8.Launch = 0.62, 0.83, 0.2, 6*sim.Microsecond
	truth.BF16.Eff, truth.BF16.MemEff, truth.BF16.Overlap, truth.BF16.Launch = 0.71, 0.9, 0.1, 3*sim.Microsecond
	truth.EffAct, truth.ActFixed = 0.7, 2*sim.Microsecond
	f, err := calib.FitCompute(synthetic(truth), base)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Costs
	if c.FP8.TileM != 128 || c.FP8.TileN != 128 || c.BF16.TileM != 64 || c.BF16.TileN != 256 {
		t.Errorf("tiles %d × %d and %d × %d, want 128 × 128 and 64 × 256", c.FP8.TileM, c.FP8.TileN, c.BF16.TileM, c.BF16.TileN)
	}
	if f.MaxErr > 0.01 || f.SingleErr > 0.01 {
		t.Errorf("fit within %.2f%% (one expert %.2f%%) of a model it can express exactly", 100*f.MaxErr, 100*f.SingleErr)
	}
	for _, p := range []struct {
		name      string
		got, want float64
	}{
		{"fp8 efficiency", c.FP8.Eff, 0.62}, {"bf16 efficiency", c.BF16.Eff, 0.71}, {"fp8 memory efficiency", c.FP8.MemEff, 0.83},
		{"bf16 memory efficiency", c.BF16.MemEff, 0.9}, {"fp8 launch µs", c.FP8.Launch.Us(), 6}, {"bf16 launch µs", c.BF16.Launch.Us(), 3},
		{"activation efficiency", c.EffAct, 0.7}, {"activation µs", c.ActFixed.Us(), 2},
		{"beside", c.Beside, 1.15}, {"communication beside", c.CommBeside, (1.5 + 1.3 + 1.3 + 1.4) / 4},
	} {
		if math.Abs(p.got/p.want-1) > 0.02 {
			t.Errorf("%s = %.4f, want %.4f", p.name, p.got, p.want)
		}
	}
	consts := f.Constants(calib.ComputeMeasured{GPU: "synthetic"})
	if len(consts) != 16 {
		t.Errorf("%d constants", len(consts))
	}
	for _, k := range consts {
		if _, ok := profile.Lookup(k.Name); !ok {
			t.Errorf("constant %s is not declared", k.Name)
		}
	}
}

func TestFitComputeRefusesTooFewRows(t *testing.T) {
	if _, err := calib.FitCompute(calib.ComputeMeasured{}, profile.MustLoad("p-ib")); err == nil {
		t.Error("an empty calibration fitted")
	}
}

// The H100's compute constants in p-h100 are the fit of the committed raw
// record; refitting it gives them back, and the grouped GEMMs stay within
// the error the sources state.
func TestFitReproducesTheH100Profile(t *testing.T) {
	data, err := os.ReadFile("../testdata/h100-compute-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	var m calib.ComputeMeasured
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	p := profile.MustLoad("p-h100")
	f, err := calib.FitCompute(m, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Constants(m) {
		if got := p.Get(c.Name); got != c.Value {
			t.Errorf("%s: p-h100 has %v, the fit gives %v", c.Name, got, c.Value)
		}
	}
	for _, r := range f.Rows {
		if r.Op != "act" && r.SMTarget == 0 && r.Groups >= 2 {
			lim := 0.08
			if r.DType == "bf16" {
				lim = 0.11
			}
			if e := math.Abs(r.Ratio() - 1); e > lim {
				t.Errorf("%s %s %d × %d: model %.1f µs against %.1f measured", r.DType, r.Op, r.Groups, r.Tokens, r.ModelUs, r.MeanUs)
			}
		}
	}
}
