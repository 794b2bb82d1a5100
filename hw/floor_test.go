package hw

import (
	"testing"

	"moebench/profile"
	"moebench/sim"
)

// A fabric run never beats the floor its loads give, and the floor is
// not loose by more than the pipeline's own latency on a link-bound load.
func TestFloorBoundsAFabricRun(t *testing.T) {
	t.Parallel()
	p := NewNICParams(profile.MustLoad("p-ib"))
	e := &sim.Engine{}
	var last sim.Time
	s := &lastSink{at: &last}
	f := NewFabric(e, p, 3, 2, s)
	loads := make([]NICLoad, 3)
	// Two senders into one receiver: the receiver's port binds.
	for src := range 2 {
		n := f.NICs[src]
		for range 200 {
			n.Post(0, Msg{Dst: 2, Bytes: 7168, BBs: 1, Pointer: true})
		}
		n.Doorbell(e, 0, 0)
		p.AddMsg(loads, src, 2, 200, 200*7168)
	}
	e.Run()
	floor, by := p.Floor(loads)
	if floor > last {
		t.Fatalf("floor %v beats the run's last delivery %v", floor, last)
	}
	if by != "ingress" {
		t.Errorf("floor set by %q, want ingress (two senders into one port)", by)
	}
	if float64(floor) < 0.9*float64(last) {
		t.Errorf("floor %v is loose against %v", floor, last)
	}
}

type lastSink struct{ at *sim.Time }

func (s *lastSink) Delivered(e *sim.Engine, _ *NIC, _ int32, _ *Msg) { *s.at = max(*s.at, e.Now()) }
func (s *lastSink) Completed(*sim.Engine, *NIC, int32, *Msg)         {}

func TestCtxFits(t *testing.T) {
	t.Parallel()
	keys := func(n int) []int32 {
		k := make([]int32, n)
		for i := range k {
			k[i] = int32(i)
		}
		return k
	}
	for _, tc := range []struct {
		name           string
		entries, ways  int
		keys           []int32
		want, wantMiss bool
	}{
		{"a few keys fit", 1350, 8, keys(20), true, false},
		{"more keys than entries cannot fit", 64, 8, keys(65), false, true},
		{"repeated keys count once", 8, 8, append(keys(8), keys(8)...), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := CtxFits(tc.entries, tc.ways, tc.keys); got != tc.want {
				t.Fatalf("CtxFits = %v, want %v", got, tc.want)
			}
			// The cache itself agrees: touching every key twice misses
			// only when they do not fit.
			c := NewCtxCache(tc.entries, tc.ways)
			for range 2 {
				for _, k := range tc.keys {
					c.Touch(k)
				}
			}
			if got := c.Misses > 0; got != tc.wantMiss {
				t.Fatalf("cache missed %d times, want misses %v", c.Misses, tc.wantMiss)
			}
			if cl := CtxClass(tc.entries, tc.ways, [][]int32{tc.keys}); (cl == "") != tc.want {
				t.Fatalf("CtxClass = %q with fits %v", cl, tc.want)
			}
		})
	}
}
