package hw

import (
	"errors"
	"maps"
	"testing"

	"moebench/fault"
	"moebench/profile"
	"moebench/sim"
)

// faultSink records each message's delivery, its first Sent stamp and the
// order of deliveries, by tag.
type faultSink struct {
	at    map[int64]sim.Time
	sent  map[int64]sim.Time
	order []int64
}

func newFaultSink() *faultSink {
	return &faultSink{at: map[int64]sim.Time{}, sent: map[int64]sim.Time{}}
}

func (s *faultSink) Delivered(e *sim.Engine, n *NIC, id int32, m *Msg) {
	s.at[m.Tag] = e.Now()
	s.sent[m.Tag] = n.Times(id).Sent
	s.order = append(s.order, m.Tag)
}
func (s *faultSink) Completed(*sim.Engine, *NIC, int32, *Msg) {}

// faultCase is a fabric of p-ib (with sets) under a plan: ranks NICs of
// qps queues, datagram queues or RC ones, one GPU a node.
type faultCase struct {
	ranks, qps int
	dgram      bool
	sets       map[string]float64
	plan       *fault.Plan
	rec        *Recovery // nil: the profile's
}

// run posts with post, rings every queue of every NIC at 0 and runs; it
// returns the sink, the failures reported and the NIC parameters.
func (c faultCase) run(t *testing.T, post func(f *Fabric)) (*faultSink, []*fault.Failure, *NICParams) {
	t.Helper()
	prof := profile.MustLoad("p-ib")
	for name, v := range c.sets {
		if err := prof.SetValue(name, v, "test"); err != nil {
			t.Fatal(err)
		}
	}
	e := &sim.Engine{}
	s := newFaultSink()
	f := NewFabric(e, NewNICParams(prof), c.ranks, c.qps, s)
	if c.dgram {
		f.Datagram(int(prof.Get("efa.paths")))
	}
	f.Place(1)
	rec := NewRecovery(prof)
	if c.rec != nil {
		rec = *c.rec
	}
	var fails []*fault.Failure
	f.SetFaults(c.plan, rec, func(x *fault.Failure) { fails = append(fails, x) })
	post(f)
	for _, n := range f.NICs {
		for q := range c.qps {
			n.Doorbell(e, 0, q)
		}
	}
	e.Run()
	return s, fails, &f.P
}

// faultAllToAll posts msgs writes of bytes from every rank to every other, on
// queue (dst + i) mod qps, tagged by their order.
func faultAllToAll(msgs, bytes int) func(f *Fabric) {
	return func(f *Fabric) {
		tag := int64(0)
		qps := len(f.NICs[0].qpIx)
		for src, n := range f.NICs {
			for i := range msgs {
				for dst := range f.NICs {
					if dst == src {
						continue
					}
					tag++
					n.Post((dst+i)%qps, Msg{Dst: int32(dst), Bytes: int32(bytes), BBs: 1, Pointer: true, Tag: tag})
				}
			}
		}
	}
}

// A plan that loses nothing and slows no link (a slow rank is the
// workload's) leaves every delivery where a healthy fabric puts it, on RC
// and datagram queues, one tier and two; the same seed twice gives the
// same run under loss, and another seed another.
func TestFaultsDeterministicAndExactWhenHarmless(t *testing.T) {
	t.Parallel()
	two := map[string]float64{"topo.tiers": 2, "topo.leaf_radix": 4, "topo.oversubscription": 1}
	for _, tc := range []struct {
		name  string
		dgram bool
		sets  map[string]float64
	}{{"rc", false, nil}, {"rc-two-tiers", false, two}, {"srd", true, nil}, {"srd-two-tiers", true, two}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := faultCase{ranks: 8, qps: 4, dgram: tc.dgram, sets: tc.sets}
			healthy, _, _ := c.run(t, faultAllToAll(6, 16<<10))
			c.plan = &fault.Plan{Seed: 3, Slow: []fault.Slow{{Rank: 1, Factor: 2}}}
			harmless, _, _ := c.run(t, faultAllToAll(6, 16<<10))
			if !maps.Equal(healthy.at, harmless.at) {
				t.Fatal("a plan without loss or link faults moved deliveries")
			}
			c.plan = &fault.Plan{Seed: 3, Loss: [fault.NumClasses]float64{0.02, 0.02}}
			a, fa, _ := c.run(t, faultAllToAll(6, 16<<10))
			b, fb, _ := c.run(t, faultAllToAll(6, 16<<10))
			if !maps.Equal(a.at, b.at) || len(fa) != len(fb) {
				t.Fatal("the same seed gave two different runs")
			}
			if maps.Equal(a.at, healthy.at) {
				t.Fatal("2% loss moved no delivery")
			}
			c.plan = &fault.Plan{Seed: 4, Loss: [fault.NumClasses]float64{0.02, 0.02}}
			d, _, _ := c.run(t, faultAllToAll(6, 16<<10))
			if maps.Equal(a.at, d.at) {
				t.Fatal("seeds 3 and 4 lost the same packets")
			}
			// Two phases of one layer (dispatch, combine) draw apart.
			base := &fault.Plan{Seed: 3, Loss: [fault.NumClasses]float64{0.02, 0.02}}
			c.plan = base.ForPhase(1, 0)
			p1, _, _ := c.run(t, faultAllToAll(6, 16<<10))
			c.plan = base.ForPhase(2, 0)
			p2, _, _ := c.run(t, faultAllToAll(6, 16<<10))
			if maps.Equal(p1.at, p2.at) {
				t.Fatal("two phases of one plan lost the same packets")
			}
		})
	}
}

// One RC message whose sender's link is down as its first packet leaves:
// of 4 packets, the second reaches the responder out of sequence, whose
// NAK the requester has a fabric crossing (and its ACK handling) later;
// it then sends all 4 again, a transmit pipeline on. Of 1 packet, nothing
// follows it: the requester waits its local ACK timeout from the packet's
// last byte. A second message on the queue, sent behind the lost one, is
// dropped as out of sequence and delivered after it (RC stays in order).
func TestRCRecoversALostPacket(t *testing.T) {
	t.Parallel()
	p := NewNICParams(profile.MustLoad("p-ib"))
	rec := Recovery{AckTimeout: AckTimeout(4), RetryCnt: 7}
	for _, tc := range []struct {
		name  string
		bytes []int
		extra func(w sim.Time) sim.Time // the first message's delay
	}{
		{"non-last", []int{16 << 10}, func(w sim.Time) sim.Time { return p.Fabric + w - w*2/4 + p.Ack + p.Fabric + p.Tx }},
		{"last", []int{4 << 10}, func(w sim.Time) sim.Time { return w + rec.AckTimeout + p.Tx }},
		{"in-order", []int{16 << 10, 4 << 10}, func(w sim.Time) sim.Time { return p.Fabric + w - w*2/4 + p.Ack + p.Fabric + p.Tx }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			post := func(f *Fabric) {
				for i, b := range tc.bytes {
					f.NICs[0].Post(0, Msg{Dst: 1, Bytes: int32(b), BBs: 1, Pointer: true, Tag: int64(i + 1)})
				}
			}
			c := faultCase{ranks: 2, qps: 1, rec: &rec}
			healthy, _, _ := c.run(t, post)
			s0 := healthy.sent[1]
			c.plan = &fault.Plan{Seed: 1, Links: []fault.Link{{Rank: 0, Factor: 1, Down: s0, Up: s0 + sim.Nanosecond}}}
			got, fails, _ := c.run(t, post)
			if len(fails) > 0 {
				t.Fatalf("failed: %v", fails[0])
			}
			w := p.WireTime(tc.bytes[0])
			if d, want := got.at[1]-healthy.at[1], tc.extra(w); d != want {
				t.Errorf("the lost message landed %v late, want %v", d, want)
			}
			if got.sent[1] != s0 {
				t.Errorf("Sent moved from %v to %v: it is the first transmission's", s0, got.sent[1])
			}
			if len(tc.bytes) > 1 {
				if got.order[0] != 1 || got.at[2] <= got.at[1] {
					t.Errorf("deliveries %v at %v: the message behind the lost one must land after it", got.order, got.at)
				}
			}
		})
	}
}

// A flap of the sender's link: RC retries on its ACK timeout and gets
// through once the link is back, within its retry count; a flap longer
// than the retries span puts the queue into error, reported once with
// the queue, the ranks and the retries, and the message is never
// delivered. SRD retransmits until the link is back, whatever its length
// below the unresponsive-peer timeout.
func TestFlapAgainstTheRetryBudget(t *testing.T) {
	t.Parallel()
	p := NewNICParams(profile.MustLoad("p-ib"))
	rec := Recovery{AckTimeout: AckTimeout(4), RetryCnt: 3, RTO: 100 * sim.Microsecond, GiveUp: sim.Second}
	w := p.WireTime(4 << 10)
	// One attempt after the last: its last byte, the timeout, a transmit.
	round := w + rec.AckTimeout + p.Tx
	for _, tc := range []struct {
		name  string
		dgram bool
		flap  sim.Time
		fail  bool
	}{
		{"rc-short", false, 5 * round / 2, false},
		{"rc-long", false, 10 * round, true},
		{"srd-long", true, 10 * round, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			post := func(f *Fabric) { f.NICs[0].Post(0, Msg{Dst: 1, Bytes: 4 << 10, BBs: 1, Pointer: true, Tag: 1}) }
			c := faultCase{ranks: 2, qps: 1, dgram: tc.dgram, rec: &rec,
				plan: &fault.Plan{Seed: 1, Links: []fault.Link{{Rank: 0, Factor: 1, Down: 0, Up: tc.flap}}}}
			got, fails, _ := c.run(t, post)
			if !tc.fail {
				if len(fails) > 0 {
					t.Fatalf("failed: %v", fails[0])
				}
				if at, ok := got.at[1]; !ok || at < tc.flap {
					t.Fatalf("delivered at %v (%v), want after the link came back at %v", at, ok, tc.flap)
				}
				return
			}
			if len(got.at) > 0 {
				t.Errorf("a message of a queue in error was delivered at %v", got.at[1])
			}
			if len(fails) != 1 {
				t.Fatalf("%d failures reported, want 1", len(fails))
			}
			f := fails[0]
			// 4 attempts, each lost: the first at s0, each next a round on.
			s0 := f.At - 4*round + p.Tx
			if f.Status != StatusRetryExceeded || f.Rank != 0 || f.Peer != 1 || f.QP != 0 || f.Retries != rec.RetryCnt || s0 < 0 || s0 > sim.Microsecond*5 {
				t.Errorf("failure %+v, want %s of rank 0's QP 0 to rank 1 after %d retries, 4 rounds of %v after the first send", *f, StatusRetryExceeded, rec.RetryCnt, round)
			}
			if !errors.Is(f, fault.ErrFailed) {
				t.Error("the failure is not fault.ErrFailed")
			}
		})
	}
}

// At 30% loss a crossing (51% a packet), RC with its default retry count
// runs out on some packet of an all-to-all and reports which queue; SRD
// at the same rate delivers everything, later than a healthy fabric.
func TestHighLossFailsRCButNotSRD(t *testing.T) {
	t.Parallel()
	plan := &fault.Plan{Seed: 9, Loss: [fault.NumClasses]float64{0.3, 0.3}}
	for _, dgram := range []bool{false, true} {
		c := faultCase{ranks: 8, qps: 4, dgram: dgram}
		healthy, _, _ := c.run(t, faultAllToAll(8, 16<<10))
		c.plan = plan
		got, fails, _ := c.run(t, faultAllToAll(8, 16<<10))
		if !dgram {
			if len(fails) != 1 {
				t.Fatalf("RC at 30%% loss: %d failures reported, want 1", len(fails))
			}
			f := fails[0]
			if f.Status != StatusRetryExceeded || f.Retries != 7 || f.Rank == f.Peer || f.QP < 0 || f.QP >= 4 {
				t.Errorf("RC failure %+v, want %s after 7 retries naming a queue", *f, StatusRetryExceeded)
			}
			continue
		}
		if len(fails) > 0 {
			t.Fatalf("SRD at 30%% loss failed: %v", fails[0])
		}
		if len(got.at) != len(healthy.at) {
			t.Fatalf("SRD delivered %d of %d messages", len(got.at), len(healthy.at))
		}
		last := func(m map[int64]sim.Time) sim.Time { return max(sim.Time(0), maxOf(m)) }
		if last(got.at) < last(healthy.at)+NewRecovery(profile.MustLoad("p-ib")).RTO {
			t.Errorf("SRD at 30%% loss done at %v, want at least a retransmission timeout after the healthy %v", last(got.at), last(healthy.at))
		}
	}
}

func maxOf(m map[int64]sim.Time) sim.Time {
	var t sim.Time
	for _, v := range m {
		t = max(t, v)
	}
	return t
}

// A degraded link at half its rate, at either end, doubles a wire-bound
// write's time on the wire; a spine at half its rate does for a write
// between leaves.
func TestDegradedLinksSlowTheWire(t *testing.T) {
	t.Parallel()
	// Two nodes a leaf: rank 2 is on the second.
	two := map[string]float64{"topo.tiers": 2, "topo.leaf_radix": 4, "topo.oversubscription": 1}
	for _, tc := range []struct {
		name string
		sets map[string]float64
		dst  int32
		plan *fault.Plan
	}{
		{"sender", nil, 1, &fault.Plan{Links: []fault.Link{{Rank: 0, Factor: 0.5}}}},
		{"responder", nil, 1, &fault.Plan{Links: []fault.Link{{Rank: 1, Factor: 0.5}}}},
		{"sender-between-leaves", two, 2, &fault.Plan{Links: []fault.Link{{Rank: 0, Factor: 0.5}}}},
		{"spine", two, 2, &fault.Plan{SpineFactor: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			post := func(f *Fabric) { f.NICs[0].Post(0, Msg{Dst: tc.dst, Bytes: mib, BBs: 1, Pointer: true, Tag: 1}) }
			c := faultCase{ranks: 4, qps: 1, sets: tc.sets}
			healthy, _, p := c.run(t, post)
			c.plan = tc.plan
			got, _, _ := c.run(t, post)
			w := p.WireTime(mib)
			if d := (got.at[1] - got.sent[1]) - (healthy.at[1] - healthy.sent[1]); d != w {
				t.Errorf("on the wire %v longer, want one more wire time %v", d, w)
			}
		})
	}
}

// A rank's faults land on the ports of its own NICs: a GPU with two NICs
// has two, ranks sharing a NIC share its.
func TestRankPortsFollowPlacement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		sets      map[string]float64
		gpn, rank int
		ports     []int
		nicOfQP1  int
	}{
		{"one-nic", nil, 1, 3, []int{3}, 3},
		{"two-nics", map[string]float64{"topo.nics_per_gpu": 2}, 1, 3, []int{6, 7}, 7},
		{"shared-nic", map[string]float64{"topo.gpus_per_nic": 2}, 4, 3, []int{1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prof := profile.MustLoad("p-ib")
			for k, v := range tc.sets {
				if err := prof.SetValue(k, v, "test"); err != nil {
					t.Fatal(err)
				}
			}
			f := NewFabric(&sim.Engine{}, NewNICParams(prof), 4, 2, newFaultSink())
			f.Place(tc.gpn)
			if got := f.RankPorts(tc.rank); !slicesEqual(got, tc.ports) {
				t.Errorf("rank %d's ports %v, want %v", tc.rank, got, tc.ports)
			}
			if got := f.NICOf(tc.rank, 1); got != tc.nicOfQP1 {
				t.Errorf("rank %d's queue 1 on NIC %d, want %d", tc.rank, got, tc.nicOfQP1)
			}
		})
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkLossyFabric is an RC all-to-all at 1% loss a crossing.
func BenchmarkLossyFabric(b *testing.B) {
	prof := profile.MustLoad("p-ib")
	plan := &fault.Plan{Seed: 1, Loss: [fault.NumClasses]float64{0.01, 0.01}}
	b.ReportAllocs()
	for range b.N {
		e := &sim.Engine{}
		f := NewFabric(e, NewNICParams(prof), 16, 4, newFaultSink())
		f.SetFaults(plan, NewRecovery(prof), func(*fault.Failure) {})
		faultAllToAll(8, 8<<10)(f)
		for _, n := range f.NICs {
			for q := range 4 {
				n.Doorbell(e, 0, q)
			}
		}
		e.Run()
	}
}

// BenchmarkHealthyFabric is the same all-to-all without faults: the path
// every run without a plan takes.
func BenchmarkHealthyFabric(b *testing.B) {
	prof := profile.MustLoad("p-ib")
	b.ReportAllocs()
	for range b.N {
		e := &sim.Engine{}
		f := NewFabric(e, NewNICParams(prof), 16, 4, newFaultSink())
		faultAllToAll(8, 8<<10)(f)
		for _, n := range f.NICs {
			for q := range 4 {
				n.Doorbell(e, 0, q)
			}
		}
		e.Run()
	}
}
