package layer

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"moebench/native"
	"moebench/profile"
)

// Every fitted constant has bounds, from physics or the datasheet, with
// their source.
func TestBoundsCoverEveryStage(t *testing.T) {
	t.Parallel()
	ds, err := lookupDatasheet(h200.Name)
	if err != nil {
		t.Fatal(err)
	}
	bs := bounds(ds, 15000)
	seen := map[string]string{}
	for _, st := range stages {
		for _, q := range st.params {
			seen[q.name] = st.what
			b, ok := bs[q.name]
			switch {
			case !ok:
				t.Errorf("%s (%s) has no bounds", q.name, st.what)
			case !(b.lo > 0 && b.lo < b.hi) || math.IsInf(b.hi, 0):
				t.Errorf("%s: bounds [%v, %v]", q.name, b.lo, b.hi)
			case b.source == "":
				t.Errorf("%s: bounds without a source", q.name)
			}
			if _, ok := profile.Lookup(q.name); !ok {
				t.Errorf("%s is not a profile constant", q.name)
			}
		}
	}
	for name := range bs {
		if _, ok := seen[name]; !ok {
			t.Errorf("bounds for %s, which no stage fits", name)
		}
	}
}

// The bounds rule out what the unbounded fit of the H200's runs returned:
// copies above the HBM's rate (gpu.peer_gbs then, 7,914 GB/s), 200 GB/s
// from one warp, a WQE posted in 0.05 ns.
func TestBoundsRuleOutTheImpossible(t *testing.T) {
	t.Parallel()
	ds, err := lookupDatasheet(h200.Name)
	if err != nil {
		t.Fatal(err)
	}
	bs := bounds(ds, 15000)
	for _, c := range []struct {
		name string
		v    float64
	}{
		{"gpu.copy_gbs", 7914}, {"gpu.copy_gbs", 2401}, {"gpu.peer_warp_gbs", 200},
		{"proxy.post_wr.ns", 0.05}, {"kernel.grid_sync_ns", 1.5}, {"kernel.recv_task_ns", 1}, {"nvlink.gbs", 451},
		{"emunic.sm_gbs", 300},
	} {
		if b := bs[c.name]; c.v >= b.lo && c.v <= b.hi {
			t.Errorf("%s = %v is within [%v, %v]", c.name, c.v, b.lo, b.hi)
		}
	}
	h800, err := lookupDatasheet("NVIDIA H800")
	if err != nil {
		t.Fatal(err)
	}
	if b := bounds(h800, 15000)["nvlink.gbs"]; b.hi != 200 {
		t.Errorf("H800's NVLink bound %v GB/s, want 200 per direction", b.hi)
	}
	if _, err := lookupDatasheet("NVIDIA A100-SXM4-80GB"); err == nil || !strings.Contains(err.Error(), "A100") {
		t.Errorf("a GPU without a datasheet entry: %v", err)
	}
}

// The search stops on a bound when the residuals would take a constant
// past it, and finds an optimum within the bounds as it is.
func TestLevenbergMarquardtStopsOnBounds(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	bs := map[string]bound{"kernel.grid_sync_ns": {185, 15000, "test"}, "kernel.cast_ns": {10, 15000, "test"}}
	params := []param{{"kernel.grid_sync_ns", 1500}, {"kernel.cast_ns", 1500}}
	resid := func(p *profile.Profile) ([]float64, error) {
		return []float64{math.Log(p.Get("kernel.grid_sync_ns") / 20), math.Log(p.Get("kernel.cast_ns") / 1200)}, nil
	}
	if _, err := levenbergMarquardt(p, params, bs, false, resid, 300); err != nil {
		t.Fatal(err)
	}
	if v := p.Get("kernel.grid_sync_ns"); v != 185 {
		t.Errorf("grid sync %v, want its lower bound 185 (the residuals ask for 20)", v)
	}
	if v := p.Get("kernel.cast_ns"); math.Abs(v/1200-1) > 0.01 {
		t.Errorf("cast %v, want 1200", v)
	}
}

// The fit keeps every constant within its bounds and says which sit on
// one; leaving each configuration out predicts it from the others.
func TestFitBoundsAndLeaveOneOut(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a model through several runs")
	}
	t.Parallel()
	truth := profile.MustLoad("p-ib")
	for name, v := range map[string]float64{"kernel.grid_sync_ns": 20, "kernel.recv_task_ns": 400, "kernel.cast_ns": 1200} {
		if err := truth.SetValue(name, v, "test"); err != nil {
			t.Fatal(err)
		}
	}
	grid := []GridPoint{
		{Transport: "direct", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 4, Tokens: 32, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 4, Tokens: 8, Hidden: 2048, TopK: 4, Experts: 16},
	}
	res := fitBack(t, &modelLib{p: truth}, grid)
	src := map[string]string{}
	for _, c := range res.Constants {
		src[c.Name] = c.Source
	}
	for _, f := range res.Fitted {
		if f.Value < f.Lo*(1-1e-3) || f.Value > f.Hi*(1+1e-3) {
			t.Errorf("%s = %v outside [%v, %v]", f.Name, f.Value, f.Lo, f.Hi)
		}
		if on := strings.Contains(src[f.Name], "on its "+f.At+" bound"); on != (f.At != "") {
			t.Errorf("%s on bound %q, its source %q", f.Name, f.At, src[f.Name])
		}
	}
	loo, evals, err := res.LeaveOneOut(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(loo) != len(res.After) || evals == 0 {
		t.Fatalf("%d predictions left out of %d runs, %d evaluations", len(loo), len(res.After), evals)
	}
	for i, c := range loo {
		if c.Run.Point != res.After[i].Run.Point {
			t.Errorf("left-out prediction %d is of %s, not %s", i, c.Run.Point.Name(), res.After[i].Run.Point.Name())
		}
		if d, m := c.Error(); !(math.Abs(d) < 0.5 && math.Abs(m) < 0.5) {
			t.Errorf("%s left out: dispatch off by %.1f%%, combine by %.1f%%", c.Run.Point.Name(), 100*d, 100*m)
		}
	}
}

// A GPU without a datasheet entry is refused before any run is modelled.
func TestFitNeedsADatasheet(t *testing.T) {
	t.Parallel()
	grid := []GridPoint{{Transport: "direct", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16}}
	raw, err := Measure(&modelLib{p: profile.MustLoad("p-ib")}, grid, Options{Reps: 1, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw.Device = native.DeviceInfo{Name: "NVIDIA A100-SXM4-80GB", SMs: 108}
	if _, err := Fit(raw, profile.MustLoad("p-ib"), "test", nil); err == nil || !strings.Contains(err.Error(), "datasheet") {
		t.Errorf("fit on an A100: %v", err)
	}
}

// Refitting the committed H200 runs gives the committed fragment, constant
// for constant, and P-IB's kernel side is that fragment's. When the model
// changes, regenerate both:
//
//	moebench calibrate --layer --from-raw native/testdata/h200-layer-raw.json,native/testdata/h200-layer-normal-raw.json \
//	  --base p-ib,native/testdata/h200-calibration.json --out native/testdata/h200-layer.json
//
// then copy its kernel.* values into profile/data/p-ib/kernel.json.
func TestFitReproducesTheCommittedFragment(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the model through 38 runs (about a minute on two cores)")
	}
	t.Parallel()
	var raw *Raw
	for _, path := range []string{"../testdata/h200-layer-raw.json", "../testdata/h200-layer-normal-raw.json"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var r Raw
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if raw == nil {
			raw = &r
		} else if raw, err = raw.Merge(&r); err != nil {
			t.Fatal(err)
		}
	}
	base, err := profile.Load("p-ib,../testdata/h200-calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(raw, base, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../testdata/h200-layer.json")
	if err != nil {
		t.Fatal(err)
	}
	var frag profile.File
	if err := json.Unmarshal(b, &frag); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{}
	for _, c := range frag.Constants {
		want[c.Name] = c.Value
		if !strings.HasPrefix(c.Source, "bounded fit") {
			t.Errorf("h200-layer.json %s: source %q, not the bounded fit's", c.Name, c.Source)
		}
	}
	for _, c := range res.Constants {
		w, ok := want[c.Name]
		switch {
		case !ok:
			t.Errorf("the refit fits %s = %v; h200-layer.json has none", c.Name, c.Value)
		case w != c.Value:
			t.Errorf("%s: refit %v, h200-layer.json %v", c.Name, c.Value, w)
		}
		delete(want, c.Name)
	}
	for name, v := range want {
		t.Errorf("h200-layer.json has %s = %v; the refit does not fit it", name, v)
	}
	pib := profile.MustLoad("p-ib")
	for _, c := range res.Constants {
		if !strings.HasPrefix(c.Name, "kernel.") {
			continue
		}
		if got, _ := pib.Constant(c.Name); got.Value != c.Value || !strings.Contains(got.Source, "bounded fit") {
			t.Errorf("p-ib %s = %v (%q); the refit gives %v", c.Name, got.Value, got.Source, c.Value)
		}
	}
}
