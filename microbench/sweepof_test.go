package microbench_test

import (
	"errors"
	"slices"
	"testing"

	"moebench/internal/field"
	"moebench/microbench"
	"moebench/profile"
	"moebench/transport/gda"
)

// A sweep runs where its name stands alone; a sweep field given where
// none reads it, or a rate field given to the single-operation sweep, is
// refused naming the field.
func TestSweepOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		names       []string
		given       []string
		sweep       string
		field       string
		is          error
		wantRefusal bool
	}{
		{name: "experiments", names: []string{"ordering", "inline"}, sweep: ""},
		{name: "rate the experiment", names: []string{"rate"}, sweep: ""},
		{name: "rate sweep", names: []string{"rate"}, given: []string{"threads", "depth"}, sweep: "rate"},
		{name: "single sweep", names: []string{"single"}, sweep: "single"},
		{name: "single with its fields", names: []string{"single"}, given: []string{"ordering", "payload", "pointer"}, sweep: "single"},
		{name: "single with a rate field", names: []string{"single"}, given: []string{"payload", "qps"}, field: "qps", is: microbench.ErrNotSingle},
		{name: "experiment with a sweep field", names: []string{"ordering"}, given: []string{"payload"}, field: "payload", is: microbench.ErrNoSweep},
		{name: "two names with a sweep field", names: []string{"rate", "single"}, given: []string{"style"}, field: "style", is: microbench.ErrNoSweep},
		{name: "every experiment with a sweep field", given: []string{"sms"}, field: "sms", is: microbench.ErrNoSweep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sweep, err := microbench.SweepOf(tc.names, func(f string) bool { return slices.Contains(tc.given, f) })
			if tc.is == nil {
				if err != nil || sweep != tc.sweep {
					t.Fatalf("SweepOf = %q, %v; want %q", sweep, err, tc.sweep)
				}
				return
			}
			var fe *field.Error
			if !errors.Is(err, tc.is) || !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("err = %v, want %v naming %s", err, tc.is, tc.field)
			}
		})
	}
}

// A sweep's lists by name run as the grid of their parsed values would;
// an unknown name is its field's error.
func TestSweepRows(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	allow := func(gda.RateConfig) error { return nil }
	skip := func(string, error) {}
	s := microbench.Sweep{Styles: []string{"thread", "coop"}, Orderings: []string{"gpu-fence"}, Payloads: []int{8}, Threads: []int{32},
		QPs: []int{1, 4}, SMs: []int{1}, PerDoorbell: []int{1}, Inline: true, Depth: 1024}
	rows, err := s.Rows(p, "rate", allow, skip)
	if err != nil || len(rows) == 0 {
		t.Fatalf("rate: %d rows, %v", len(rows), err)
	}
	want, err := microbench.RateSweep(p, microbench.RateGrid{Styles: []gda.Publication{gda.PubThread, gda.PubCoop},
		Orderings: []gda.Ordering{gda.OrderGPUFence}, Payloads: []int{8}, Threads: []int{32}, QPs: []int{1, 4}, SMs: []int{1},
		PerDoorbell: []int{1}, Inline: true, Depth: 1024}, allow, skip)
	same := func(a, b microbench.Row) bool { return a.Case == b.Case && a.Model == b.Model } // Paper is NaN
	if err != nil || !slices.EqualFunc(rows, want, same) {
		t.Errorf("rate rows %v, want the grid's %v (%v)", rows, want, err)
	}
	s.Orderings = []string{"all"}
	rows, err = s.Rows(p, "single", allow, skip)
	if n := len(gda.OrderingModes()) * 3; err != nil || len(rows) != n {
		t.Errorf("single: %d rows, %v; want 3 for each of the orderings (%d)", len(rows), err, n)
	}
	for _, tc := range []struct{ field, sweep string }{{"style", "rate"}, {"ordering", "rate"}, {"ordering", "single"}} {
		bad := s
		if tc.field == "style" {
			bad.Styles = []string{"x"}
		} else {
			bad.Orderings = []string{"x"}
		}
		var fe *field.Error
		if _, err := bad.Rows(p, tc.sweep, allow, skip); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s %s x: %v, want its field's error", tc.sweep, tc.field, err)
		}
	}
}
