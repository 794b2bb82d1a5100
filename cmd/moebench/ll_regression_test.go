package main

import (
	"math"
	"strconv"
	"testing"
)

// llBaseline is what the LL model gives with the kernel-side constants
// measured on an H200 (p-ib kernel.json, from calibrate --layer): mean µs
// per (preset, phase). A change elsewhere must not move LL by more than
// llTolerance; a deliberate change to the LL model re-records the figures
// here. (Before the constants were measured, at zero, the default run gave
// 354/804, 305/601 and 308/777 µs for dc, mini-gda and mini-proxy, and
// the in-situ DeepEP run 317/569 µs.)
var llBaseline = []struct {
	name string
	args []string
	mean map[string]float64
}{
	{"default", []string{"run"}, map[string]float64{
		"dc/dispatch": 351.867, "dc/combine": 649.569,
		"mini-gda/dispatch": 312.833, "mini-gda/combine": 602.781,
		"mini-proxy/dispatch": 319.239, "mini-proxy/combine": 804.638,
	}},
	{"in-situ DeepEP", []string{"run", "--workload", "deepep-ll", "--ranks", "8", "--gpus-per-node", "4", "--preset", "deepep-v1"}, map[string]float64{
		"deepep-v1/dispatch": 303.905, "deepep-v1/combine": 571.792,
	}},
}

const llTolerance = 0.02

func TestLLResultsDoNotMove(t *testing.T) {
	t.Parallel()
	for _, b := range llBaseline {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			rows := csvRows(t, append(b.args, "--format", "csv")...)
			seen := 0
			for _, r := range rows {
				key := r["preset"] + "/" + r["phase"]
				want, ok := b.mean[key]
				if !ok {
					continue
				}
				seen++
				got, err := strconv.ParseFloat(r["mean_us"], 64)
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(got-want) / want; d > llTolerance {
					t.Errorf("%s: %.1f µs, was %.1f µs: moved %.1f%%, more than %.0f%%", key, got, want, 100*d, 100*llTolerance)
				} else {
					t.Logf("%s: %.1f µs, was %.1f µs (%.2f%%)", key, got, want, 100*d)
				}
			}
			if seen != len(b.mean) {
				t.Fatalf("found %d of the %d baseline rows", seen, len(b.mean))
			}
		})
	}
}
