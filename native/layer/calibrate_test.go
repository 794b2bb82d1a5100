package layer

import (
	"errors"
	"strings"
	"testing"

	"moebench/profile"
)

// A quick grid runs the named grid's first two points with the default
// repetitions, after a line naming the device; a grid this host cannot
// run is ErrGrid and runs nothing.
func TestMeasureGrid(t *testing.T) {
	t.Parallel()
	var heard []string
	raw, err := MeasureGrid(&modelLib{p: profile.MustLoad("p-ib")}, "ll", true, func(s string) { heard = append(heard, s) })
	if err != nil {
		t.Fatal(err)
	}
	want := LowLatencyGrid()[:2]
	if len(raw.Runs) != len(want) {
		t.Fatalf("%d runs, want %d", len(raw.Runs), len(want))
	}
	for i, r := range raw.Runs {
		if r.Point != want[i] || r.Config.Reps != DefaultReps || !r.Config.FlushL2 {
			t.Errorf("run %d: %+v, %d reps, flush %v; want %+v, %d reps, flushed", i, r.Point, r.Config.Reps, r.Config.FlushL2, want[i], DefaultReps)
		}
	}
	if len(heard) == 0 || !strings.HasPrefix(heard[0], h200.Name+", driver ") || !strings.HasSuffix(heard[0], ": 2 native layer runs") {
		t.Errorf("progress %q: want the device and 2 runs first", heard)
	}
	if _, err := MeasureGrid(&modelLib{p: profile.MustLoad("p-ib")}, "gpus", false, nil); !errors.Is(err, ErrGrid) {
		t.Errorf("the NVLink grid on one GPU: %v, want ErrGrid", err)
	}
}
