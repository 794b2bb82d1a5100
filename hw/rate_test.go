package hw

import (
	"testing"

	"moebench/profile"
	"moebench/sim"
)

// A burst of messages from one NIC is held by whichever of its message
// pipeline and its egress link is slower, and each message says which:
// small writes at a message rate of 1 M/s wait for the pipeline, large
// ones at the profile's rate for the link. The phase floor names the same.
func TestRateBoundSaysWhatHeldTheMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		sets  []string
		bytes int32
		bound bool   // every message after the first held by the pipeline
		floor string // what sets the floor
	}{
		{"message rate of 1 M/s, 8 B writes", []string{"nic.msg_rate_mps=1"}, 8, true, "msg_rate"},
		{"the profile's rate, 64 KiB writes", nil, 64 << 10, false, "egress"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := profile.MustLoad("p-ib")
			if err := p.ApplySets(c.sets); err != nil {
				t.Fatal(err)
			}
			np := NewNICParams(p)
			e := &sim.Engine{}
			s := &timesSink{}
			const n = 32
			f := NewFabric(e, np, 2, n, s)
			loads := make([]NICLoad, 2)
			for q := range n {
				f.NICs[0].Post(q, Msg{Dst: 1, Bytes: c.bytes, BBs: 1, Pointer: c.bytes > 8})
				f.NICs[0].Doorbell(e, 0, q)
				np.AddMsg(loads, 0, 1, 1, int64(c.bytes))
			}
			e.Run()
			if len(s.got) != n {
				t.Fatalf("%d deliveries, want %d", len(s.got), n)
			}
			held := 0
			for _, m := range s.got {
				if m.RateBound {
					held++
				}
			}
			want := 0
			if c.bound {
				want = n - 1 // the first finds the pipeline free
			}
			if held != want {
				t.Errorf("%d of %d messages held by the message rate, want %d", held, n, want)
			}
			if _, by := np.Floor(loads); by != c.floor {
				t.Errorf("floor set by %q, want %q", by, c.floor)
			}
		})
	}
}
