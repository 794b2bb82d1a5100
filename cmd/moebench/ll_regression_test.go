package main

import (
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"
)

// llBaseline is what the LL model gave before internode normal mode and
// group-limited routing (commit 928ada4; main at 4ebfa0a, with the kernel
// constants at zero, gives the same): mean µs per (preset, phase).
// Those changes must not move LL by more than llTolerance; a deliberate
// change to the LL model re-records the figures here.
var llBaseline = []struct {
	name string
	args []string
	mean map[string]float64
}{
	{"default", []string{"run"}, map[string]float64{
		"dc/dispatch": 354.207, "dc/combine": 803.886,
		"mini-gda/dispatch": 305.123, "mini-gda/combine": 600.638,
		"mini-proxy/dispatch": 308.411, "mini-proxy/combine": 777.209,
	}},
	{"in-situ DeepEP", []string{"run", "--workload", "deepep-ll", "--ranks", "8", "--gpus-per-node", "4", "--preset", "deepep-v1"}, map[string]float64{
		"deepep-v1/dispatch": 317.274, "deepep-v1/combine": 568.859,
	}},
}

const llTolerance = 0.02

func TestLLResultsDoNotMove(t *testing.T) {
	t.Parallel()
	for _, b := range llBaseline {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			out, _, err := runCLI(t, append(b.args, "--format", "csv")...)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			recs, err := csv.NewReader(strings.NewReader(strings.Join(lines, "\n"))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, c := range recs[0] {
				col[c] = i
			}
			seen := 0
			for _, r := range recs[1:] {
				key := r[col["preset"]] + "/" + r[col["phase"]]
				want, ok := b.mean[key]
				if !ok {
					continue
				}
				seen++
				got, err := strconv.ParseFloat(r[col["mean_us"]], 64)
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
