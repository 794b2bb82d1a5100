package calib

import (
	"math"
	"testing"

	"moebench/native"
	"moebench/workloads"
)

// besideFake is a GPU whose layer phases take 10 and 13 µs alone and
// 1.25 times that beside a GEMM, whose GEMMs take 100 µs alone and 150 µs
// beside the layer.
type besideFake struct{ gemms []native.GEMMConfig }

func (f *besideFake) Device() native.DeviceInfo {
	return native.DeviceInfo{Name: "NVIDIA H100", SMs: 132, CCMajor: 9}
}
func (f *besideFake) DeviceCount() (int, error) { return 1, nil }
func (f *besideFake) NCCLAllToAll(native.A2AConfig) (native.A2AResult, error) {
	return native.A2AResult{}, nil
}
func (f *besideFake) GEMM(c native.GEMMConfig) (native.GEMMResult, error) {
	f.gemms = append(f.gemms, c)
	return native.GEMMResult{MeanUs: 100, Calls: 10}, nil
}
func (f *besideFake) Layer(c native.LayerConfig, _ native.LayerRouting) (native.LayerResult, error) {
	return layerResult(c, 1), nil
}
func (f *besideFake) GEMMBeside(g native.GEMMConfig, c native.LayerConfig, _ native.LayerRouting) (native.BesideResult, error) {
	f.gemms = append(f.gemms, g)
	return native.BesideResult{GEMM: native.GEMMResult{MeanUs: 150, Calls: 7}, Layer: layerResult(c, 1.25)}, nil
}

func layerResult(c native.LayerConfig, slow float64) native.LayerResult {
	res := native.LayerResult{Times: make([][2][]native.RankPhase, c.Reps), ClockMHz: 1980}
	for rep := range res.Times {
		for ph, us := range []float64{10, 13} {
			row := make([]native.RankPhase, c.Ranks)
			for r := range row {
				ns := 1000 * us * slow
				row[r] = native.RankPhase{IssueDoneNs: ns / 2, SendDoneNs: ns / 2, WaitDoneNs: ns, ReadyNs: ns, KernelNs: ns}
			}
			res.Times[rep][ph] = row
		}
	}
	return res
}

func TestMeasureBeside(t *testing.T) {
	t.Parallel()
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	f := &besideFake{}
	rows, err := MeasureBeside(f, w, true, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9*b }
	for i, r := range rows {
		wantTokens := []int{256, 1024}[i]
		// Two ranks of 12 SMs leave 132 - 24 to the GEMM.
		if r.CommSMs != 24 || r.GEMM.SMTarget != 108 || r.GEMM.Tokens != wantTokens || r.GEMM.Groups != 8 || r.GEMM.DType != "fp8" {
			t.Errorf("row %d: %d comm SMs, GEMM %+v; want 24, 108 SMs, 8 experts × %d FP8 tokens", i, r.CommSMs, r.GEMM, wantTokens)
		}
		if r.Layer != "normal direct, 2 ranks × 512 tokens" {
			t.Errorf("row %d: layer %q", i, r.Layer)
		}
		if r.GEMM.MeanUs != 100 || r.BesideUs != 150 || r.BesideCalls != 7 {
			t.Errorf("row %d: GEMM %g µs alone, %g beside in %d calls; want 100, 150, 7", i, r.GEMM.MeanUs, r.BesideUs, r.BesideCalls)
		}
		if !near(r.DispatchUs, 10) || !near(r.CombineUs, 13) || !near(r.DispatchBy, 12.5) || !near(r.CombineBy, 16.25) {
			t.Errorf("row %d: dispatch %g, %g beside; combine %g, %g; want 10, 12.5, 13, 16.25", i, r.DispatchUs, r.DispatchBy, r.CombineUs, r.CombineBy)
		}
	}
	if len(f.gemms) != 4 {
		t.Errorf("%d GEMMs launched, want 4 (each alone and beside)", len(f.gemms))
	}
}
