package moe

import (
	"testing"

	"moebench/sim"
)

// progress integrates an op's rate over the spans of the other kind of
// work: at the slower rate inside them, the faster outside.
func TestProgress(t *testing.T) {
	us := func(v float64) sim.Time { return sim.Time(v * float64(sim.Microsecond)) }
	spans := [][2]sim.Time{{us(10), us(20)}, {us(40), us(50)}}
	for _, tc := range []struct {
		name              string
		start, full, slow float64
		want              float64
	}{
		{"before any span", 0, 5, 10, 5},
		{"into the first span", 0, 15, 20, 10 + 20.0/3}, // a third left at 10 µs, at the span's rate
		{"through the first span", 0, 30, 60, 20 + 15},  // a third before, a sixth in the span, half after
		{"inside a span", 12, 4, 8, 20},                 // 8 µs slow to 20 = all of it
		{"across both", 5, 60, 120, 5 + 5 + 10 + 20 + 10 + 25},
		{"after the spans", 60, 7, 14, 67},
		{"nothing to do", 3, 0, 0, 3},
	} {
		got := progress(us(tc.start), us(tc.full), us(tc.slow), spans)
		if d := got.Us() - tc.want; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: ends at %.3f µs, want %.3f", tc.name, got.Us(), tc.want)
		}
	}
}
