package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"

	"moebench/results"
)

// run --overlap adds the layer with its experts' compute to each result:
// its figures add up, the step is the layers repeated, and the same run
// without --overlap has no compute at all.
func TestRunWithCompute(t *testing.T) {
	t.Parallel()
	args := []string{"run", "--ranks", "16", "--tokens", "32", "--transport", "mini-gda,mini-proxy", "--format", "json"}
	out, _, err := runCLI(t, append(args, "--overlap", "two-batch", "--layers", "4")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc results.Layer
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 2 {
		t.Fatalf("%d results", len(doc.Results))
	}
	for _, r := range doc.Results {
		c := r.Compute
		if c == nil {
			t.Fatalf("%s: no compute", r.Preset)
		}
		if c.Overlap != "two-batch" || c.Layers != 4 || c.ComputeSMs <= 0 || c.ComputeUs <= 0 {
			t.Errorf("%s: %+v", r.Preset, c)
		}
		if math.Abs(c.LayerUs-c.ComputeUs-c.ExposedUs) > 1e-6 || math.Abs(c.StepUs-4*c.LayerUs) > 1e-6 {
			t.Errorf("%s: layer %.3f, compute %.3f, exposed %.3f, step %.3f", r.Preset, c.LayerUs, c.ComputeUs, c.ExposedUs, c.StepUs)
		}
		if want := 32 / (c.StepUs * 1e-6); math.Abs(c.TokensPerSec/want-1) > 1e-9 {
			t.Errorf("%s: %.1f tokens/s a GPU, want %.1f", r.Preset, c.TokensPerSec, want)
		}
		if len(c.Critical) == 0 || c.BoundBy == "" {
			t.Errorf("%s: no critical path", r.Preset)
		}
	}
	plain, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, `"compute"`) {
		t.Error("a run without --overlap reports compute")
	}
	text, _, err := runCLI(t, "run", "--ranks", "16", "--tokens", "32", "--transport", "mini-gda", "--overlap", "none")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "The layer with its experts' compute") || !strings.Contains(text, "tokens/s/GPU") {
		t.Errorf("table without the compute section:\n%s", text)
	}
}

// Under power-law routing the hottest rank's experts take longest: replay
// --overlap names it in every layer, its GEMM lies on the critical path,
// and the table's layer row shows it.
func TestReplayNamesTheHottestGEMM(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := genTrace(t, dir, "skew.bin", append([]string{"--routing", "powerlaw:1.2", "--layers", "2"}, replayShape...)...)
	out, err := replayCLI(t, "--trace", tr, "--transport", "mini-gda", "--overlap", "none", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Layers []struct {
			Compute *results.Compute `json:"compute"`
		} `json:"layers"`
		Aggregate struct {
			Transports []results.AggTransport `json:"transports"`
		} `json:"aggregate"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Layers) != 2 {
		t.Fatalf("%d layers", len(doc.Layers))
	}
	for i, l := range doc.Layers {
		c := l.Compute
		if c == nil {
			t.Fatalf("layer %d: no compute", i)
		}
		// The hottest experts have the lowest ids: rank 0 hosts them.
		if c.HotRank != 0 || c.HotUs < 2*c.MeanUs {
			t.Errorf("layer %d: hottest rank %d, its experts %.1f µs against a mean of %.1f", i, c.HotRank, c.HotUs, c.MeanUs)
		}
		on := false
		for _, st := range c.Critical {
			on = on || (st.Compute && st.Rank == 0 && st.Name == "experts")
		}
		if !on {
			t.Errorf("layer %d: critical path %+v misses rank 0's experts", i, c.Critical)
		}
	}
	agg := doc.Aggregate.Transports[0].Compute
	if agg == nil || agg.Layers != 2 || len(agg.HottestRanks) == 0 || agg.HottestRanks[0].Rank != 0 || agg.HottestRanks[0].Layers != 2 {
		t.Errorf("aggregate compute %+v: want rank 0 hottest in both layers", agg)
	}
	text, err := replayCLI(t, "--trace", tr, "--transport", "mini-gda", "--overlap", "none")
	if err != nil {
		t.Fatal(err)
	}
	// The layer's row names the hottest rank where the phases name
	// their slowest.
	if !regexp.MustCompile(`layer\+experts +[0-9.]+ +0 `).MatchString(text) {
		t.Errorf("replay table without the layer's compute rows naming rank 0:\n%s", text)
	}
}
