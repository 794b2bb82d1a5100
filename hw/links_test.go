package hw

import (
	"math"
	"strings"
	"testing"

	"moebench/profile"
	"moebench/sim"
)

// linkRun posts, on rank 0 of two ranks of p-ib with sets applied, msgs
// messages of bytes each to rank 1, spread round robin over qps queues,
// every queue rung at once; it returns when the last became visible and
// the fabric.
func linkRun(t *testing.T, qps, msgs, bytes int, sets ...string) (sim.Time, *Fabric) {
	t.Helper()
	p := profile.MustLoad("p-ib")
	if err := p.ApplySets(sets); err != nil {
		t.Fatal(err)
	}
	e := &sim.Engine{}
	var last sim.Time
	f := NewFabric(e, NewNICParams(p), 2, qps, &lastSink{at: &last})
	n := f.NICs[0]
	for i := range msgs {
		n.Post(i%qps, Msg{Dst: 1, Bytes: int32(bytes), BBs: 1, Pointer: bytes > 8})
	}
	for q := range qps {
		n.Doorbell(e, 0, q)
	}
	e.Run()
	return last, f
}

// p-ib's link: 200 Gb/s at 99.2% efficiency is 24.8 bytes a nanosecond,
// 4 KiB packets with 42 B of headers each.
const mib = 1 << 20

var mibWireNs = float64(mib+mib/4096*42) / 24.8

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// A rank's queues stripe over its NICs (queue q on NIC q mod n), each
// with a link of the full rate: four 1 MiB writes on four queues take
// four wire times on one NIC, two on two and one on four. The fixed
// latencies (doorbell, payload read, switch, write into memory) are the
// same either way and cancel in the differences; what is left is whole
// wire times, within a nanosecond of rounding a message.
func TestLinksStripeQueuesOverNICs(t *testing.T) {
	t.Parallel()
	one, _ := linkRun(t, 4, 4, mib)
	for _, tc := range []struct {
		nics  string
		saved float64 // wire times saved against one NIC
	}{{"2", 2}, {"4", 3}} {
		got, _ := linkRun(t, 4, 4, mib, "topo.nics_per_gpu="+tc.nics)
		if d := (one - got).NsF(); !near(d, tc.saved*mibWireNs, 1e-3) {
			t.Errorf("%s NICs: the last write lands %.0f ns before one NIC's, want %.0f (%.0f wire times of %.0f ns)",
				tc.nics, d, tc.saved*mibWireNs, tc.saved, mibWireNs)
		}
	}
	// Queues 0 and 2 share a link of two: two writes on them take two
	// wire times, as on one NIC.
	a, _ := linkRun(t, 1, 2, mib)
	p := profile.MustLoad("p-ib")
	if err := p.ApplySets([]string{"topo.nics_per_gpu=2"}); err != nil {
		t.Fatal(err)
	}
	e := &sim.Engine{}
	var b sim.Time
	f := NewFabric(e, NewNICParams(p), 2, 4, &lastSink{at: &b})
	for _, q := range []int{0, 2} {
		f.NICs[0].Post(q, Msg{Dst: 1, Bytes: mib, BBs: 1, Pointer: true})
		f.NICs[0].Doorbell(e, 0, q)
	}
	e.Run()
	if d := (b - a).NsF(); math.Abs(d) > 2 {
		t.Errorf("two writes on queues 0 and 2 of two NICs land %.0f ns apart from two on one NIC's queue, want the same time", d)
	}
}

// A plane is a link of its own at its share of the port's rate: one write
// on a plane of two takes twice the wire time, two writes on two planes
// take what they take on one plane of the whole rate, but for the second
// write's slot of the shared pipeline (1/260 µs), which on one plane it
// spends waiting for the link anyway.
func TestPlanesSplitTheRate(t *testing.T) {
	t.Parallel()
	one, _ := linkRun(t, 1, 1, mib)
	half, _ := linkRun(t, 1, 1, mib, "topo.planes_per_nic=2")
	if d := (half - one).NsF(); !near(d, mibWireNs, 1e-3) {
		t.Errorf("one write on a plane of two lands %.0f ns after one on a whole port, want one more wire time, %.0f", d, mibWireNs)
	}
	two, _ := linkRun(t, 2, 2, mib)
	split, _ := linkRun(t, 2, 2, mib, "topo.planes_per_nic=2")
	if d := (split - two).NsF(); math.Abs(d) > 1000.0/260+1 {
		t.Errorf("two writes on two planes land %.0f ns from two on one plane of the whole rate, want the same time", d)
	}
}

// Each NIC has its own message pipeline; planes share their NIC's. 4,096
// small writes over 64 queues keep one pipeline busy, each taking a slot
// of 1/260 µs (nic.msg_rate_mps): four NICs save three quarters of the
// slots, four planes none. The queues' own doorbell and WQE work (about
// 1.5 µs each, in parallel) stays within the pipeline's time; the
// tolerance covers the first slots' start.
func TestNICsHaveAPipelineEachAndPlanesShareIt(t *testing.T) {
	t.Parallel()
	const msgs = 4096
	slot := 1000.0 / 260
	one, _ := linkRun(t, 64, msgs, 8)
	four, _ := linkRun(t, 64, msgs, 8, "topo.nics_per_gpu=4")
	planes, _ := linkRun(t, 64, msgs, 8, "topo.planes_per_nic=4")
	if d := (one - four).NsF(); !near(d, msgs*3/4*slot, 0.02) {
		t.Errorf("four NICs finish %.0f ns before one, want %.0f (three quarters of %d slots of %.2f ns)", d, msgs*3/4*slot, msgs, slot)
	}
	if d := (planes - one).NsF(); math.Abs(d) > 0.02*msgs*slot {
		t.Errorf("four planes finish %.0f ns from one, want the same pipeline time", d)
	}
}

// Each NIC caches its own connection contexts; planes share their NIC's.
// A one-set cache of four ways (conn.entries 4, conn.ways 4) served eight
// queues in turn keeps the first four (loaded at setup) and misses on each
// of the other four, at the requester and the responder alike; two NICs
// each see four queues and miss on none.
func TestNICsCacheContextsApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sets   []string
		misses int64
	}{
		{"one NIC", nil, 4},
		{"two NICs", []string{"topo.nics_per_gpu=2"}, 0},
		{"two planes", []string{"topo.planes_per_nic=2"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := profile.MustLoad("p-ib")
			if err := p.ApplySets(append([]string{"conn.entries=4", "conn.ways=4"}, tc.sets...)); err != nil {
				t.Fatal(err)
			}
			e := &sim.Engine{}
			var last sim.Time
			f := NewFabric(e, NewNICParams(p), 2, 8, &lastSink{at: &last})
			for q := range 8 {
				f.NICs[0].Post(q, Msg{Dst: 1, Bytes: 8, BBs: 1})
				// A microsecond apart: served, sent and received in
				// queue order.
				f.NICs[0].Doorbell(e, sim.Time(q)*sim.Ns(1000), q)
			}
			e.Run()
			if tx, rx := f.NICs[0].TxMisses, f.NICs[1].RxMisses; tx != tc.misses || rx != tc.misses {
				t.Errorf("%d requester and %d responder context misses, want %d each", tx, rx, tc.misses)
			}
			if _, m := f.NICs[0].CtxCounts(); m != tc.misses {
				t.Errorf("the requester's caches count %d misses, want %d", m, tc.misses)
			}
		})
	}
}

// With two tiers each link of a rank (its NICs and their planes) sits on a
// rail of its own: link k of local GPU g on rail g·links + k, one leaf a
// rail when a leaf holds every node.
func TestLinksTakeRailsOfTheirOwn(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	if err := p.ApplySets([]string{"topo.tiers=2", "topo.nics_per_gpu=2", "topo.planes_per_nic=2"}); err != nil {
		t.Fatal(err)
	}
	f := NewFabric(&sim.Engine{}, NewNICParams(p), 4, 4, &lastSink{at: new(sim.Time)})
	f.Place(2)
	for i, n := range f.NICs {
		for k := range 4 {
			if got, want := n.linkPort(k).leaf, int32(i%2*4+k); got != want {
				t.Errorf("rank %d link %d on leaf %d, want %d", i, k, got, want)
			}
		}
	}
	if f.leaves != 8 {
		t.Errorf("%d leaves, want 8 (two GPUs a node × four links)", f.leaves)
	}
}

// GPUs sharing a NIC of two planes share both planes' ports: two GPUs'
// writes of 1 MiB on queues 1 (plane 1) take two wire times of a plane,
// as one GPU's two writes would, and a write on plane 0 meanwhile one.
func TestGPUsSharingANICSharePlanes(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	if err := p.ApplySets([]string{"topo.gpus_per_nic=2", "topo.planes_per_nic=2"}); err != nil {
		t.Fatal(err)
	}
	e := &sim.Engine{}
	s := &planeSink{at: map[int32]sim.Time{}}
	f := NewFabric(e, NewNICParams(p), 4, 2, s)
	f.Place(2) // ranks 0 and 1 share a NIC, ranks 2 and 3 another
	for r := range 2 {
		f.NICs[r].Post(1, Msg{Dst: int32(2 + r), Bytes: mib, BBs: 1, Pointer: true, Tag: int64(r)})
		f.NICs[r].Doorbell(e, 0, 1)
	}
	f.NICs[0].Post(0, Msg{Dst: 3, Bytes: mib, BBs: 1, Pointer: true, Tag: 2})
	f.NICs[0].Doorbell(e, 0, 0)
	e.Run()
	plane := 2 * mibWireNs // a plane runs at half the port's rate
	if d := math.Abs((s.at[1] - s.at[0]).NsF()); !near(d, plane, 1e-3) {
		t.Errorf("the two GPUs' writes on plane 1 land %.0f ns apart, want one plane's wire time, %.0f", d, plane)
	}
	if d := (max(s.at[0], s.at[1]) - s.at[2]).NsF(); !near(d, plane, 1e-3) {
		t.Errorf("plane 0's write lands %.0f ns before plane 1's second, want %.0f", d, plane)
	}
}

type planeSink struct{ at map[int32]sim.Time }

func (s *planeSink) Delivered(e *sim.Engine, _ *NIC, _ int32, m *Msg) { s.at[int32(m.Tag)] = e.Now() }
func (s *planeSink) Completed(*sim.Engine, *NIC, int32, *Msg)         {}

// GPUs sharing a NIC and a GPU with several NICs are refused together,
// naming both constants.
func TestTopologyRefusesSharedAndSeveralNICs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sets []string
		bad  bool
	}{
		{[]string{"topo.gpus_per_nic=2"}, false},
		{[]string{"topo.nics_per_gpu=4"}, false},
		{[]string{"topo.gpus_per_nic=2", "topo.planes_per_nic=2"}, false},
		{[]string{"topo.gpus_per_nic=2", "topo.nics_per_gpu=2"}, true},
	} {
		p := profile.MustLoad("p-ib")
		if err := p.ApplySets(tc.sets); err != nil {
			t.Fatal(err)
		}
		err := NewNICParams(p).Topo.Validate()
		if (err != nil) != tc.bad {
			t.Errorf("%v: error %v, want one: %v", tc.sets, err, tc.bad)
		}
		if err != nil && (!strings.Contains(err.Error(), "topo.gpus_per_nic") || !strings.Contains(err.Error(), "topo.nics_per_gpu")) {
			t.Errorf("%v: %v does not name both constants", tc.sets, err)
		}
	}
}

// A NIC holds its rank's queues striped over the rank's NICs, or the
// queues of every rank sharing it.
func TestQueuesPerNIC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		t    Topology
		rank int
		want int
	}{
		{Topology{}, 256, 256},
		{Topology{NICsPerGPU: 4}, 256, 64},
		{Topology{NICsPerGPU: 4, PlanesPerNIC: 2}, 256, 64},
		{Topology{NICsPerGPU: 4}, 255, 64},
		{Topology{GPUsPerNIC: 2}, 256, 512},
	} {
		if got := tc.t.QueuesPerNIC(tc.rank); got != tc.want {
			t.Errorf("%+v: %d queues a rank, %d per NIC, want %d", tc.t, tc.rank, got, tc.want)
		}
	}
}
