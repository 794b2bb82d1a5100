package sizing

import (
	"math"
	"testing"

	"moebench/hw"
	"moebench/moe"
)

// With the experts' compute under two micro-batches and the receive hook,
// each candidate's figures are the layer's with it: its compute plus the
// communication it leaves exposed, with the two phases alone kept as
// they were without compute.
func TestStudyWithComputeComparesTheLayer(t *testing.T) {
	t.Parallel()
	d := deployment(t, 16, 256, 128)
	space := Space{Presets: presets(t, "mini-gda", "mini-proxy"), Knobs: map[string][]int{"qps-per-peer": {1, 8}, "workers": {1, 4}}}
	raw := study(t, &Study{Deployment: d, Space: space, Limits: Limits{Tolerance: 0.05}})
	c := moe.ComputeConfig{FFN: moe.FFN{Intermediate: 2048, SharedIntermediate: 2048}, FP8: true, Overlap: moe.OverlapHook,
		Costs: hw.NewGEMMCosts(d.Profile)}
	d.Compute = &c
	with := study(t, &Study{Deployment: d, Space: space, Limits: Limits{Tolerance: 0.05}})
	for i, cand := range with.Candidates {
		f, r := cand.Figures, raw.Candidates[i].Figures
		if f == nil || r == nil {
			continue
		}
		t.Logf("%-24s raw %7.1f µs | layer %7.1f, compute %7.1f, exposed %6.1f, comm %7.1f  %s", cand.Name, r.LayerUs, f.LayerUs, f.ComputeUs, f.ExposedUs, f.CommUs, cand.Verdict)
		if math.Abs(f.CommUs-r.LayerUs) > 1e-6 {
			t.Errorf("%s: communication %.3f µs with compute, %.3f without", cand.Name, f.CommUs, r.LayerUs)
		}
		if f.ComputeUs <= 0 || f.ExposedUs < 0 || math.Abs(f.LayerUs-f.ComputeUs-f.ExposedUs) > 1e-6 {
			t.Errorf("%s: layer %.3f ≠ compute %.3f + exposed %.3f", cand.Name, f.LayerUs, f.ComputeUs, f.ExposedUs)
		}
	}
	if with.Recommended < 0 || raw.Recommended < 0 {
		t.Fatalf("no recommendation: %v / %v", raw.Reasons, with.Reasons)
	}
	t.Logf("recommended: raw %s, with compute %s", raw.Candidates[raw.Recommended].Name, with.Candidates[with.Recommended].Name)
}
