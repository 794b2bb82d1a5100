package layer

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"moebench/profile"
)

// transferGroup is a share of the transfer runs whose unfitted predictions
// must stay within bounds on the median and the worst phase error (none:
// the errors are only logged).
type transferGroup struct {
	name        string
	in          func(RawRun) bool
	median, max float64
}

// transferGroups are the runs a fit on 2 and 4 virtual ranks does not see,
// with the errors the model holds them to, a fresh fit's as well as the
// committed one's. 8 ranks through the emulated NIC share its 4 SMs' warps
// twice as thinly as the fit's runs, a sharing the NIC's model does not yet
// follow (20-60% off, as the fit lands): logged, not held.
var transferGroups = []transferGroup{
	{"1 rank on the whole GPU, every path", func(r RawRun) bool { return r.Point.Ranks == 1 && r.Point.SMsPerRank == 0 }, 0.05, 0.10},
	{"1 rank, 16 to 128 SMs", func(r RawRun) bool { return r.Point.Ranks == 1 && r.Point.SMsPerRank > 0 }, 0.10, 0.25},
	{"8 ranks, direct path", func(r RawRun) bool { return r.Point.Ranks == 8 && r.Point.Transport == "direct" }, 0.10, 0.20},
	{"8 ranks, emulated NIC", func(r RawRun) bool { return r.Point.Ranks == 8 && r.Point.Transport != "direct" }, 0, 0},
}

func readRaw(t *testing.T, path string) *Raw {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw Raw
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &raw
}

// checkTransfer compares every run of raw on prof and holds each group of
// runs the fit did not see to its bounds.
func checkTransfer(t *testing.T, raw *Raw, prof *profile.Profile) {
	t.Helper()
	cs, err := Compare(raw, prof)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range transferGroups {
		var errs []float64
		for _, c := range cs {
			if g.in(c.Run) {
				d, m := c.Error()
				errs = append(errs, math.Abs(d), math.Abs(m))
			}
		}
		if len(errs) == 0 {
			t.Errorf("%s: no runs", g.name)
			continue
		}
		slices.Sort(errs)
		n := len(errs)
		med := (errs[(n-1)/2] + errs[n/2]) / 2
		t.Logf("%s: %d phases, median %.1f%%, max %.1f%%", g.name, n, 100*med, 100*errs[n-1])
		if g.max > 0 && (med > g.median || errs[n-1] > g.max) {
			t.Errorf("%s: median %.1f%%, max %.1f%% (want at most %.0f%% and %.0f%%)", g.name, 100*med, 100*errs[n-1], 100*g.median, 100*g.max)
		}
	}
}

// The committed fit on the H100's 2- and 4-rank runs predicts, unfitted,
// one rank on the whole GPU, the SM sweep and 8 ranks.
func TestTransferPredictsUnfittedRuns(t *testing.T) {
	t.Parallel()
	const frag = "../testdata/h100-transfer-fit24.json"
	var f struct {
		Measured struct {
			Layer Raw `json:"layer"`
		} `json:"measured"`
	}
	data, err := os.ReadFile(frag)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", frag, err)
	}
	if len(f.Measured.Layer.Runs) == 0 {
		t.Fatalf("%s carries no runs it was fitted on", frag)
	}
	for _, r := range f.Measured.Layer.Runs {
		if r.Point.Ranks != 2 && r.Point.Ranks != 4 {
			t.Errorf("%s was fitted on %s: the transfer fit takes 2- and 4-rank runs only", frag, r.Point.Name())
		}
	}
	prof, err := profile.Load("p-ib,../testdata/h200-calibration.json," + frag)
	if err != nil {
		t.Fatal(err)
	}
	checkTransfer(t, readRaw(t, "../testdata/h100-transfer-raw.json"), prof)
}

// Refitting the 2- and 4-rank runs afresh predicts the others as well: the
// bounds hold for what the fit returns, not only for the committed
// fragment. It takes 30 to 60 s on two cores.
func TestTransferRefitPredictsUnfittedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("refits 22 runs (about a minute)")
	}
	t.Parallel()
	raw := readRaw(t, "../testdata/h100-transfer-raw.json")
	fit := &Raw{Device: raw.Device, Host: raw.Host, ClockMHz: raw.ClockMHz, Routing: raw.Routing, Seed: raw.Seed}
	for _, r := range raw.Runs {
		if r.Point.Ranks == 2 || r.Point.Ranks == 4 {
			fit.Runs = append(fit.Runs, r)
		}
	}
	base, err := profile.Load("p-ib,../testdata/h200-calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(fit, base, "transfer test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Constants {
		t.Logf("%s = %g %s", c.Name, c.Value, c.Unit)
	}
	checkTransfer(t, raw, res.Profile)
}
