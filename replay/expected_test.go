package replay_test

import (
	"testing"

	"moebench/replay"
	"moebench/traces"
)

func TestExpected(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                 string
		steps, layers        int // the header's
		stepsFlag, maxLayers int
		want                 int
	}{
		{"the whole trace", 10, 4, 0, 0, 40},
		{"the first steps", 10, 4, 3, 0, 12},
		{"more steps than the trace", 10, 4, 30, 0, 40},
		{"at most some groups", 10, 4, 0, 5, 5},
		{"a bound past the trace", 10, 4, 0, 100, 40},
		{"a header without steps", 0, 4, 0, 0, 0},
		{"a header without steps, bounded", 0, 4, 0, 7, 7},
	} {
		h := traces.Header{Steps: tc.steps, Layers: tc.layers}
		if got := replay.Expected(h, tc.stepsFlag, tc.maxLayers); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
