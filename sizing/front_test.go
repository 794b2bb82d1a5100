package sizing

import (
	"slices"
	"testing"
)

// The recommendation of a front of one says so, rather than "the fastest
// of the 1 candidates".
func TestRecommendReasonsOfAFrontOfOne(t *testing.T) {
	c := &Candidate{Name: "mini-gda qps=4", Figures: &Figures{LayerUs: 280, BoundBy: "egress"}}
	l := Limits{Tolerance: 0.05}
	if got := recommendReasons(c, c, l, 1); !slices.Contains(got, "the only candidate on the Pareto front") {
		t.Errorf("front of one: %q", got)
	}
	if got := recommendReasons(c, c, l, 3); !slices.Contains(got, "the fastest of the 3 candidates on the Pareto front, and the leanest within 5% of it") {
		t.Errorf("front of three: %q", got)
	}
}
