package summary_test

import (
	"fmt"
	"testing"

	"moebench/internal/summary"
)

func TestStreamBoundedPercentiles(t *testing.T) {
	t.Parallel()
	var s summary.Stream
	for i := 1; i <= 5000; i++ {
		s.Add(float64(i))
	}
	if !s.Bucketed() {
		t.Fatalf("past %d values the stream still holds them exactly", summary.ExactSamples)
	}
	sum := s.Summary()
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"mean", sum.Mean, 2500.5}, {"min", sum.Min, 1}, {"max", sum.Max, 5000}, {"p50", sum.P50, 2500}, {"p99", sum.P99, 4950}} {
		if d := c.got/c.want - 1; d > 1e-3 || d < -1e-3 {
			t.Errorf("%s = %v, want %v within 0.1%%", c.name, c.got, c.want)
		}
	}
}

// Up to ExactSamples values a stream summarizes exactly, as Of does.
func TestStreamExactAgreesWithOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    []float64
	}{{"empty", nil}, {"one", []float64{7}}, {"three", []float64{3, 1, 2}}, {"skewed", []float64{1, 1, 1, 1, 100, 2, 3}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var s summary.Stream
			for _, v := range tc.v {
				s.Add(v)
			}
			if got, want := s.Summary(), summary.Of(tc.v); got != want || s.N() != len(tc.v) {
				t.Errorf("stream %+v (n %d), Of %+v", got, s.N(), want)
			}
		})
	}
}

func ExampleOf() {
	fmt.Printf("%+v\n", summary.Of([]float64{3, 1, 2, 10}))
	// Output: {Mean:4 Min:1 Max:10 P50:2.5 P99:9.79}
}

func BenchmarkStreamAdd(b *testing.B) {
	b.ReportAllocs()
	var s summary.Stream
	for i := range b.N {
		s.Add(float64(i%5000) + 0.5)
	}
}
