package hw

import (
	"testing"

	"moebench/transport/profile"
	"moebench/transport/sim"
)

func TestWireTime(t *testing.T) {
	t.Parallel()
	p := NewNICParams(profile.MustLoad("p-ib"))
	// 24.8 GB/s: 7,168 B payload + 2 packets of 42 B headers.
	got := p.WireTime(7168).NsF()
	want := float64(7168+2*42) / 24.8
	if d := got - want; d < -0.01 || d > 0.01 {
		t.Fatalf("WireTime(7168) = %.3f ns, want %.3f", got, want)
	}
	if p.WireTime(0) <= 0 {
		t.Fatal("an empty write still sends one packet")
	}
}

type sink struct{ cqes []sim.Time }

func (s *sink) Delivered(*sim.Engine, *NIC, int32, *Msg) {}
func (s *sink) Completed(_ *sim.Engine, _ *NIC, _ int32, m *Msg) {
	s.cqes = append(s.cqes, m.CQE)
}

func TestQPCompletesInOrderAndCeilingHolds(t *testing.T) {
	t.Parallel()
	e := &sim.Engine{}
	s := &sink{}
	f := NewFabric(e, NewNICParams(profile.MustLoad("p-ib")), 2, 4, s)
	n := f.NICs[0]
	for qp := range 4 {
		for range 100 {
			n.Post(qp, Msg{Dst: 1, Bytes: 8, BBs: 1})
		}
		n.Doorbell(e, 0, qp)
	}
	e.Run()
	if len(s.cqes) != 400 {
		t.Fatalf("%d completions, want 400", len(s.cqes))
	}
	for i := 1; i < len(s.cqes); i++ {
		if s.cqes[i] < s.cqes[i-1] {
			t.Fatalf("completion %d reported before %d", i, i-1)
		}
	}
	span := s.cqes[len(s.cqes)-1] - s.cqes[0]
	if rate := 399 / span.Us(); rate > 260.5 {
		t.Fatalf("NIC carried %.1f M msg/s, above its 260 ceiling", rate)
	}
}
