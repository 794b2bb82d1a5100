package sizing

import (
	"strings"
	"testing"
)

// A candidate over what the hardware holds (the NIC's QPs, the GPU's
// memory) or with queues too shallow for LL mode fails unrun, with the
// reason and its figures, and is never recommended; the study has no
// recommendation when every candidate fails.
func TestHardwareLimitsFailCandidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		tokens  int
		sets    []string
		space   Space
		failed  map[string]string // candidate: in its reason
		recomm  string            // "" none
		noneRun bool
	}{
		{name: "QPs over the NIC's", tokens: 8, sets: []string{"nic.max_qps=40"},
			space:  Space{Knobs: map[string][]int{"qps-per-peer": {1, 2, 4}}},
			failed: map[string]string{"mini-gda qps=4": "64 QPs per NIC (16 ranks × 4 per peer), more than the NIC's 40 (nic.max_qps = 40"},
			recomm: "mini-gda qps=1"},
		// 0.97 GB of buffer: one QP's send queues fit beside it, 64's do not.
		{name: "send queues over the GPU's memory", tokens: 132, sets: []string{"gpu.memory_gb=1"},
			space:  Space{Knobs: map[string][]int{"qps-per-peer": {1, 64}}},
			failed: map[string]string{"mini-gda qps=64": "more than the GPU's 1.000 GB (gpu.memory_gb = 1,"},
			recomm: "mini-gda qps=1"},
		{name: "queues too shallow for LL", tokens: 600,
			space:   Space{Knobs: map[string][]int{"dcis": {1, 8}}},
			failed:  map[string]string{"dc dcis=1": "QP depth too small", "dc dcis=8": "at most 511 fit"},
			noneRun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := deployment(t, 16, 128, tc.tokens, tc.sets...)
			tc.space.Presets = presets(t, "mini-gda")
			if tc.noneRun {
				tc.space.Presets = presets(t, "dc")
			}
			res := study(t, &Study{Deployment: d, Space: tc.space, Limits: Limits{Tolerance: 0.05}})
			for name, why := range tc.failed {
				c := find(t, res, name)
				if c.Verdict != Rejected || c.Stage != StageFailed || !strings.Contains(c.Reason, why) {
					t.Errorf("%s: %s (%s): %s; want failed, saying %q", name, c.Verdict, c.Stage, c.Reason, why)
				}
				if c.Figures != nil {
					t.Errorf("%s was run", name)
				}
				if c.Resources.QPsPerNIC == 0 || c.Resources.BufferBytes == 0 {
					t.Errorf("%s: no figures of what it would take: %+v", name, c.Resources)
				}
			}
			switch {
			case tc.recomm == "" && res.Recommended >= 0:
				t.Errorf("recommended %s", res.Candidates[res.Recommended].Name)
			case tc.recomm != "" && (res.Recommended < 0 || res.Candidates[res.Recommended].Name != tc.recomm):
				t.Errorf("recommendation %d, want %s: %v", res.Recommended, tc.recomm, res.Reasons)
			}
		})
	}
}
