package published

import (
	"slices"
	"strconv"
	"testing"
)

// Each LL row launches as DeepEP V1 did when it was measured, three warp
// groups of ten warps an SM, where that fits an H800; the rows it does
// not fit run on today's launch.
func TestLLRowsLaunchAsMeasured(t *testing.T) {
	t.Parallel()
	for _, r := range DeepEP().Rows {
		if r.Conditions.Mode != LL {
			continue
		}
		want := (r.Conditions.Experts + 2) / 3
		if want > 132 {
			want = 0
		}
		if r.NumSMs != want {
			t.Errorf("%s %s: %d SMs, want %d", r.Experiment, r.Case, r.NumSMs, want)
		}
		a := r.Args()
		i := slices.Index(a, "--num-sms")
		switch {
		case want == 0 && i >= 0:
			t.Errorf("%s %s: --num-sms %s, want DeepEP's own launch", r.Experiment, r.Case, a[i+1])
		case want > 0 && (i < 0 || a[i+1] != strconv.Itoa(want)):
			t.Errorf("%s %s: args %v lack --num-sms %d", r.Experiment, r.Case, a, want)
		}
	}
}

// The normal rows route as DeepEP's tests do: across nodes the groups are
// the nodes, a token limited to min(nodes, 4); on one node no limit.
func TestNormalRowsRouteAsDeepEPsTests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ep, topkGroups, groups int }{{8, 0, 0}, {16, 2, 2}, {32, 4, 4}, {64, 4, 8}} {
		c := normalRun(tc.ep)
		if c.TopKGroups != tc.topkGroups || c.ExpertGroups != tc.groups {
			t.Errorf("EP%d: top-%d of %d groups, want top-%d of %d", tc.ep, c.TopKGroups, c.ExpertGroups, tc.topkGroups, tc.groups)
		}
	}
}
