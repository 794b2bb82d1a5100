package sizing

import (
	"strings"
	"testing"

	"moebench/moe"
)

// A candidate over a limit its library states, or over what the GPU's
// memory leaves once the model keeps its share, fails unrun with the
// limit named and is never recommended; every checked candidate carries
// its headroom against each limit.
func TestLimitsFailCandidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                   string
		ranks, experts, toks   int
		mode                   moe.Mode
		sets                   []string
		presets                []string
		knobs                  map[string][]int
		failed, why, recommend string
		// headroom the recommendation must show: limit, used, of.
		limit    string
		used, of int64
	}{
		// DeepEP V1's normal-mode kernels take 20 nodes of 8 GPUs.
		{name: "a library's rank cap", ranks: 256, experts: 256, toks: 8, mode: moe.Normal,
			presets: []string{"deepep-v1", "mini-gda"}, knobs: map[string][]int{"qps-per-peer": {1}},
			failed: "deepep-v1 qps=1", why: "deepep-v1.normal_ranks: 256 ranks, more than 160", recommend: "mini-gda qps=1",
			limit: "nic.max_qps", used: 256, of: 131072},
		// 0.97 GB of buffer at 132 tokens: one QP's send queues (16 peers
		// × 1,024 × 64 B = 1 MiB) fit in the 1 GB 140 GB kept leaves,
		// 64's do not.
		{name: "memory the model keeps", ranks: 16, experts: 128, toks: 132, mode: moe.LL, sets: []string{"gpu.reserved_gb=140"},
			presets: []string{"mini-gda"}, knobs: map[string][]int{"qps-per-peer": {1, 64}},
			failed: "mini-gda qps=64", why: "more than the GPU's 1.000 GB left (gpu.memory_gb = 141, profile p-ib: H200 SXM: 141 GB of HBM3e (NVIDIA H200 datasheet), less gpu.reserved_gb = 140", recommend: "mini-gda qps=1",
			limit: "nic.max_qp_wr", used: 1024, of: 32768},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := deployment(t, tc.ranks, tc.experts, tc.toks, tc.sets...)
			d.Mode, d.NVLink = tc.mode, tc.mode == moe.Normal
			res := study(t, &Study{Deployment: d, Space: Space{Presets: presets(t, tc.presets...), Knobs: tc.knobs}, Limits: Limits{Tolerance: 0.05}})
			c := find(t, res, tc.failed)
			if c.Verdict != Rejected || c.Stage != StageFailed || !strings.Contains(c.Reason, tc.why) {
				t.Errorf("%s: %s (%s): %s; want failed, saying %q", c.Name, c.Verdict, c.Stage, c.Reason, tc.why)
			}
			if res.Recommended < 0 || res.Candidates[res.Recommended].Name != tc.recommend {
				t.Fatalf("recommended %d, want %s", res.Recommended, tc.recommend)
			}
			r := res.Candidates[res.Recommended]
			found := false
			for _, u := range r.Headroom {
				if u.Over {
					t.Errorf("%s: %s marked over", r.Name, u.Name)
				}
				if u.Name == tc.limit {
					found = u.Used == tc.used && u.Limit == tc.of
				}
			}
			if !found {
				t.Errorf("%s: headroom %+v, want %s %d of %d", r.Name, r.Headroom, tc.limit, tc.used, tc.of)
			}
			if len(c.Headroom) == 0 {
				t.Errorf("%s: no headroom", c.Name)
			}
		})
	}
}
