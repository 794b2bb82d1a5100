package hw

import (
	"fmt"
	"testing"

	"moebench/profile"
	"moebench/sim"
)

// a2aSink notes when the last message within a leaf and the last between
// leaves became visible.
type a2aSink struct {
	local, cross sim.Time
}

func (s *a2aSink) Delivered(e *sim.Engine, nic *NIC, _ int32, m *Msg) {
	k := nic.fab.link(m.QP)
	if nic.fab.NICs[m.Src].linkPort(k).leaf == nic.linkPort(k).leaf {
		s.local = max(s.local, e.Now())
	} else {
		s.cross = max(s.cross, e.Now())
	}
}
func (s *a2aSink) Completed(*sim.Engine, *NIC, int32, *Msg) {}

// allToAll runs an all-to-all of one bytes-sized write per ordered pair of
// ranks, gpusPerNode to a node, each rank sending to rank+1, rank+2, ...
// in turn on a QP per peer, on p-ib with sets applied. The sender rings
// each write's doorbell 5% slower than the line rate takes it, so writes
// reach the fabric in time order and no receiver sees incast: what slows
// the exchange is the fabric.
func allToAll(t *testing.T, ranks, gpusPerNode, bytes int, sets ...string) *a2aSink {
	t.Helper()
	p := profile.MustLoad("p-ib")
	if err := p.ApplySets(sets); err != nil {
		t.Fatal(err)
	}
	e := &sim.Engine{}
	s := &a2aSink{}
	f := NewFabric(e, NewNICParams(p), ranks, ranks, s)
	f.Place(gpusPerNode)
	pace := f.P.WireTime(bytes) * 21 / 20
	for i, n := range f.NICs {
		for k := 1; k < ranks; k++ {
			d := (i + k) % ranks
			n.Post(k, Msg{Dst: int32(d), Bytes: int32(bytes), BBs: 1, Pointer: true})
			n.Doorbell(e, sim.Time(k)*pace, k)
		}
	}
	e.Run()
	return s
}

func TestOneLeafIsTheSingleSwitch(t *testing.T) {
	t.Parallel()
	// 64 ranks on 8 nodes, radix 64: each rail's eight NICs share one
	// leaf, but rails differ, so cross-rail traffic crosses a spine; with
	// one rail per node (one NIC for all eight GPUs) nothing does.
	ref := allToAll(t, 64, 8, 4096, "topo.gpus_per_nic=8")
	got := allToAll(t, 64, 8, 4096, "topo.gpus_per_nic=8", "topo.tiers=2")
	if ref.local != got.local || got.cross != 0 {
		t.Fatalf("one leaf: last delivery %v (cross-leaf %v), want the single switch's %v", got.local, got.cross, ref.local)
	}
}

func TestGPUsSharingANICShareItsLink(t *testing.T) {
	t.Parallel()
	one := allToAll(t, 32, 8, 16384)
	two := allToAll(t, 32, 8, 16384, "topo.gpus_per_nic=2")
	// Each rank paces itself at 95% of a link, so one NIC per GPU idles
	// 5%: sharing takes 2/1.05 as long.
	if r := float64(two.local) / float64(one.local); r < 1.7 || r > 2.1 {
		t.Fatalf("two GPUs per NIC: all-to-all takes %.2f× as long, want about 1.9×", r)
	}
}

// EP256 (32 nodes of eight) on radix-16 leaves: eight NICs to a leaf, four
// leaves per rail, eight spines. Nearly all traffic crosses a spine, and
// with static ECMP the flows of a leaf do not spread evenly over its eight
// uplinks: the busiest uplink sets the time. Adaptive routing spreads them
// and runs as fast as the single switch.
func TestECMPCollisionsSlowAnEP256AllToAll(t *testing.T) {
	t.Parallel()
	const ranks, bytes = 256, 65536
	flat := allToAll(t, ranks, 8, bytes)
	ecmp := allToAll(t, ranks, 8, bytes, "topo.tiers=2", "topo.leaf_radix=16", "topo.adaptive=0")
	adaptive := allToAll(t, ranks, 8, bytes, "topo.tiers=2", "topo.leaf_radix=16", "topo.adaptive=1")
	e, a, s := ecmp.cross.Us(), adaptive.cross.Us(), flat.local.Us()
	t.Logf("EP256 all-to-all of 64 KiB: single switch %.0f µs, leaf/spine adaptive %.0f µs, static ECMP %.0f µs", s, a, e)
	if e < 1.1*a {
		t.Errorf("static ECMP %.0f µs, want at least 10%% over adaptive routing's %.0f µs", e, a)
	}
	if a > 1.05*s {
		t.Errorf("adaptive routing %.0f µs, want within 5%% of the single switch's %.0f µs", a, s)
	}
}

// A 2:1 oversubscribed leaf (ten NICs, five uplinks) halves the bandwidth
// out of the leaf: the share of the all-to-all that crosses leaves takes
// about twice as long as on a non-blocking one.
func TestOversubscribedSpineSlowsTheCrossLeafShare(t *testing.T) {
	t.Parallel()
	const ranks, bytes = 160, 65536
	var cross [2]sim.Time
	for i, o := range []int{1, 2} {
		s := allToAll(t, ranks, 8, bytes, "topo.tiers=2", "topo.leaf_radix=16", "topo.adaptive=1", fmt.Sprintf("topo.oversubscription=%d", o))
		cross[i] = s.cross
	}
	r := float64(cross[1]) / float64(cross[0])
	t.Logf("cross-leaf share: %.0f µs at 1:1, %.0f µs at 2:1", cross[0].Us(), cross[1].Us())
	if r < 1.6 {
		t.Fatalf("2:1 oversubscription: the cross-leaf share takes %.2f× as long as at 1:1, want about 2×", r)
	}
}

// A NIC keeps state only for the queues it used: posting on three of a
// thousand QPs creates three.
func TestQPStateIsCreatedOnFirstUse(t *testing.T) {
	t.Parallel()
	e := &sim.Engine{}
	f := NewFabric(e, NewNICParams(profile.MustLoad("p-ib")), 2, 1000, &a2aSink{})
	n := f.NICs[0]
	for _, qp := range []int{3, 500, 999, 500} {
		n.Post(qp, Msg{Dst: 1, Bytes: 8, BBs: 1})
		n.Doorbell(e, 0, qp)
	}
	e.Run()
	if got := n.QPsUsed(); got != 3 {
		t.Fatalf("%d QPs created, want 3", got)
	}
	if got := f.NICs[1].QPsUsed(); got != 0 {
		t.Fatalf("the receiving NIC created %d QPs, want 0", got)
	}
	if f.msgs.Live() != 0 || f.dbs.Live() != 0 {
		t.Fatalf("%d messages and %d doorbells still held after every delivery", f.msgs.Live(), f.dbs.Live())
	}
}
