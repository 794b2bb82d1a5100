package results

import (
	"math"
	"testing"
)

// Tails are percentiles over the seeds that completed, by linear
// interpolation between closest ranks: of 1..100, p50 50.5 and p99 99.01.
func TestTailOverSeeds(t *testing.T) {
	t.Parallel()
	var v []float64
	for i := 100; i >= 1; i-- {
		v = append(v, float64(i))
	}
	got := tailOf(v, 3)
	if got.Seeds != 103 || got.Failed != 3 || math.Abs(got.P50Us-50.5) > 1e-9 || math.Abs(got.P99Us-99.01) > 1e-9 || got.MaxUs != 100 {
		t.Errorf("tail of 1..100 with 3 failed: %+v", got)
	}
	if got := tailOf(nil, 5); got != (Tail{Seeds: 5, Failed: 5}) {
		t.Errorf("every seed failed: %+v", got)
	}
}
