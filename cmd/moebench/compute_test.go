package main

import (
	"encoding/json"
	"math"
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
