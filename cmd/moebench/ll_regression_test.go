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
		"dc/dispatch": 345.981, "dc/combine": 809.222,
		"mini-gda/dispatch": 366.182, "mini-gda/combine": 611.063,
		"mini-proxy/dispatch": 316.463, "mini-proxy/combine": 780.557,
	}},
	{"in-situ DeepEP", []string{"run", "--workload", "deepep-ll", "--ranks", "8", "--gpus-per-node", "4", "--preset", "deepep-v1"}, map[string]float64{
		"deepep-v1/dispatch": 353.112, "deepep-v1/combine": 574.957,
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
