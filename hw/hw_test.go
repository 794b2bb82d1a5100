package hw

import (
	"testing"

	"moebench/profile"
	"moebench/sim"
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
func (s *sink) Completed(e *sim.Engine, _ *NIC, _ int32, _ *Msg) {
	s.cqes = append(s.cqes, e.Now())
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

// With little switch buffering, a sender whose destination is congested
// stalls its link, delaying its messages to an idle destination too
// (head-of-line blocking); with ample buffering it does not.
func TestSmallSwitchBufferBlocksHeadOfLine(t *testing.T) {
	t.Parallel()
	lastToIdle := func(bufKB float64) sim.Time {
		prof := profile.MustLoad("p-ib")
		if err := prof.SetValue("fabric.port_buffer_kb", bufKB, "test"); err != nil {
			t.Fatal(err)
		}
		e := &sim.Engine{}
		s := &sentSink{}
		f := NewFabric(e, NewNICParams(prof), 4, 2, s)
		// NICs 0 and 1 both send 50 × 7 KiB to NIC 2; NIC 1 then sends,
		// on the same queue, one message to the idle NIC 3.
		for src := range 2 {
			for range 50 {
				f.NICs[src].Post(0, Msg{Dst: 2, Bytes: 7168, BBs: 1, Pointer: true})
			}
		}
		f.NICs[1].Post(0, Msg{Dst: 3, Bytes: 7168, BBs: 1, Pointer: true, Tag: 1})
		for src := range 2 {
			f.NICs[src].Doorbell(e, 0, 0)
		}
		e.Run()
		return s.tagged
	}
	ample, tight := lastToIdle(1<<20), lastToIdle(16)
	if tight < ample+5*sim.Microsecond {
		t.Fatalf("message to an idle port sent at %v with 16 KiB buffers, %v with ample ones: want head-of-line delay", tight, ample)
	}
}

type sentSink struct{ tagged sim.Time }

func (s *sentSink) Delivered(_ *sim.Engine, nic *NIC, id int32, m *Msg) {
	if m.Tag == 1 {
		s.tagged = nic.Times(id).Sent
	}
}
func (s *sentSink) Completed(*sim.Engine, *NIC, int32, *Msg) {}

// A queue's state is retired once it drains, and a later message on it
// behaves as on a queue never retired: an all-to-all over RC keeps only
// the queues in use, and QPsUsed still counts every queue used.
func TestIdleQueuesAreRetiredExactly(t *testing.T) {
	t.Parallel()
	e := &sim.Engine{}
	s := &sink{}
	f := NewFabric(e, NewNICParams(profile.MustLoad("p-ib")), 2, 64, s)
	const gap = 100 * sim.Microsecond
	for round := range 2 {
		at := sim.Time(round) * gap
		e.RunUntil(at)
		if live := f.qstate.Live(); round > 0 && live != 0 {
			t.Fatalf("drained before round %d: %d queue states live, want 0", round, live)
		}
		for qp := range 64 {
			f.NICs[0].Post(qp, Msg{Dst: 1, Bytes: 4096, BBs: 1, Pointer: true})
			f.NICs[0].Doorbell(e, at, qp)
		}
	}
	e.Run()
	cqes := s.cqes
	if used, live := f.NICs[0].QPsUsed(), f.qstate.Live(); used != 64 || live != 0 {
		t.Fatalf("after draining: %d QPs used (want 64), %d states live (want 0)", used, live)
	}
	// Retired between the rounds, the queues must carry the second round
	// exactly as the first, shifted by the gap.
	if len(cqes) != 128 {
		t.Fatalf("%d completions, want 128", len(cqes))
	}
	for i := range 64 {
		if d := cqes[64+i] - cqes[i]; d != gap {
			t.Fatalf("completion %d of the second round came %v after the first's, want 100µs", i, d)
		}
	}
}

type timesSink struct{ got []MsgTimes }

func (s *timesSink) Delivered(_ *sim.Engine, nic *NIC, id int32, _ *Msg) {
	s.got = append(s.got, nic.Times(id))
}
func (s *timesSink) Completed(*sim.Engine, *NIC, int32, *Msg) {}

// A timeline too long for a message's 32-bit offsets (here 5 ms after its
// Issue of 0) moves to the wide table and reads back exactly the times a
// message issued just before its doorbell gets.
func TestLongTimelinesStayExact(t *testing.T) {
	t.Parallel()
	at := 5 * sim.Millisecond
	run := func(issue sim.Time) (MsgTimes, *Fabric) {
		e := &sim.Engine{}
		s := &timesSink{}
		f := NewFabric(e, NewNICParams(profile.MustLoad("p-ib")), 2, 1, s)
		e.RunUntil(at)
		id := f.NICs[0].Post(0, Msg{Dst: 1, Bytes: 4096, BBs: 1, Pointer: true, Issue: issue})
		f.SetIssueEnd(id, at)
		if w := f.msgs.At(id).has(fWide); w != (issue == 0) {
			t.Fatalf("issued at %v, ended at %v: wide %v", issue, at, w)
		}
		f.NICs[0].Doorbell(e, at, 0)
		e.Run()
		if len(s.got) != 1 {
			t.Fatalf("%d deliveries, want 1", len(s.got))
		}
		return s.got[0], f
	}
	wide, f := run(0)
	near, _ := run(at - sim.Microsecond)
	if f.wide.Live() != 0 {
		t.Errorf("%d wide timelines left after delivery", f.wide.Live())
	}
	near.Issue = 0
	if wide != near || wide.Visible <= at || wide.IssueEnd != at {
		t.Errorf("wide timeline %+v, want %+v (visible after %v)", wide, near, at)
	}
}

// A queue that cannot be rung again before its doorbell's handling ends
// (the declared lead) is freed without an event, and every message's
// timeline stays exactly as with the event. Queue 3 is rung a second time
// while busy, so both paths run.
func TestDoorbellLeadSkipsFreeEventsExactly(t *testing.T) {
	t.Parallel()
	p := NewNICParams(profile.MustLoad("p-ib"))
	mmio := p.Doorbell + 4*p.WQE
	run := func(lead sim.Time) ([]MsgTimes, uint64) {
		e := &sim.Engine{}
		s := &timesSink{}
		f := NewFabric(e, p, 3, 8, s)
		f.DoorbellLead(lead)
		n := f.NICs[0]
		h := e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, arg int64) {
			qp := int(arg)
			for range 1 + int(arg)%3 {
				n.Post(qp, Msg{Dst: int32(1 + qp%2), Bytes: 4096, BBs: 1, Pointer: true, Issue: e.Now()})
			}
			n.Ring(e, e.Now(), qp, mmio)
		}))
		for round := range 50 {
			at := sim.Time(round) * 700 * sim.Nanosecond
			for qp := range 8 {
				e.At(at, h, 0, int64(qp))
			}
			e.At(at+300*sim.Nanosecond, h, 0, 3)
		}
		e.Run()
		return s.got, e.Handled()
	}
	with, evWith := run(mmio)
	without, evWithout := run(0)
	if len(with) != len(without) || len(with) == 0 {
		t.Fatalf("%d and %d deliveries", len(with), len(without))
	}
	for i := range with {
		if with[i] != without[i] {
			t.Fatalf("delivery %d: %+v with the lead, %+v without", i, with[i], without[i])
		}
	}
	if evWith >= evWithout {
		t.Fatalf("%d events with the lead, %d without: none skipped", evWith, evWithout)
	}
}

// A doorbell that arrives while a queue's handling was taken to end
// unrung means the declared lead is wrong: Ring refuses it rather than
// let the queue serve it early.
func TestRingRefusesADoorbellInsideTheLead(t *testing.T) {
	t.Parallel()
	p := NewNICParams(profile.MustLoad("p-ib"))
	e := &sim.Engine{}
	f := NewFabric(e, p, 2, 1, &sink{})
	f.DoorbellLead(10 * sim.Microsecond)
	n := f.NICs[0]
	n.Post(0, Msg{Dst: 1, Bytes: 8, BBs: 1})
	n.Ring(e, 0, 0, p.MMIO)
	e.RunUntil(p.MMIO + p.Doorbell/2) // the doorbell is being handled
	defer func() {
		if recover() == nil {
			t.Fatal("a doorbell inside the declared lead was accepted")
		}
	}()
	n.Post(0, Msg{Dst: 1, Bytes: 8, BBs: 1})
	n.Ring(e, e.Now(), 0, p.MMIO)
}

// hintSink records the hints the NIC gives ahead of its reports, and the
// reports.
type hintSink struct {
	delivHints, delivs map[[3]int64]int
	compHints, comps   map[[2]int32]int
}

func (s *hintSink) Delivered(_ *sim.Engine, _ *NIC, _ int32, m *Msg) {
	s.delivs[[3]int64{int64(m.Src), int64(m.Dst), m.Tag}]++
}
func (s *hintSink) Completed(_ *sim.Engine, n *NIC, _ int32, m *Msg) {
	s.comps[[2]int32{int32(n.Index), m.QP}]++
}
func (s *hintSink) PrefetchDelivered(src, dst int32, tag int64) {
	s.delivHints[[3]int64{int64(src), int64(dst), tag}]++
}
func (s *hintSink) PrefetchCompleted(nic, qp int32) { s.compHints[[2]int32{nic, qp}]++ }

// The hints name the message a delivery reports and the queue a completion
// retires, never anything else.
func TestSinkHintsNameTheirReports(t *testing.T) {
	t.Parallel()
	e := &sim.Engine{}
	s := &hintSink{delivHints: map[[3]int64]int{}, delivs: map[[3]int64]int{}, compHints: map[[2]int32]int{}, comps: map[[2]int32]int{}}
	const nics, qps = 8, 8
	f := NewFabric(e, NewNICParams(profile.MustLoad("p-ib")), nics, qps, s)
	for src := range nics {
		for qp := range qps {
			for k := range 20 {
				dst := (src + 1 + qp) % nics
				f.NICs[src].Post(qp, Msg{Dst: int32(dst), Bytes: 8, BBs: 1, Tag: int64(src*1000 + qp*100 + k), Unsignaled: k%4 != 3})
			}
			f.NICs[src].Doorbell(e, sim.Time(qp), qp)
		}
	}
	e.Run()
	if len(s.delivHints) == 0 || len(s.compHints) == 0 {
		t.Fatalf("%d delivery and %d completion hints, want some of each", len(s.delivHints), len(s.compHints))
	}
	for k := range s.delivHints {
		if s.delivs[k] == 0 {
			t.Errorf("delivery hint %v names no delivery", k)
		}
	}
	for k := range s.compHints {
		if s.comps[k] == 0 {
			t.Errorf("completion hint %v names no completion", k)
		}
	}
}
