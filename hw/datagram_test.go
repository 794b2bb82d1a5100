package hw

import (
	"testing"

	"moebench/profile"
	"moebench/sim"
)

type orderSink struct {
	delivered []int64 // tags, in delivery order
	at        map[int64]sim.Time
	cqes      []int64 // tags, in completion order
}

func (s *orderSink) Delivered(e *sim.Engine, _ *NIC, _ int32, m *Msg) {
	s.delivered = append(s.delivered, m.Tag)
	s.at[m.Tag] = e.Now()
}
func (s *orderSink) Completed(_ *sim.Engine, _ *NIC, _ int32, m *Msg) { s.cqes = append(s.cqes, m.Tag) }

// A large write (its payload read by DMA) and then an 8 B inline write on
// the same queue: an RC queue delivers them in order, a datagram queue
// sends the small one as soon as its WQE is processed, so it lands first
// by the large one's payload read and wire time.
func TestDatagramQueueDeliversOutOfOrder(t *testing.T) {
	t.Parallel()
	for _, dgram := range []bool{false, true} {
		e := &sim.Engine{}
		s := &orderSink{at: map[int64]sim.Time{}}
		p := NewNICParams(profile.MustLoad("p-ib"))
		f := NewFabric(e, p, 2, 1, s)
		if dgram {
			f.Datagram(1)
		}
		n := f.NICs[0]
		n.Post(0, Msg{Dst: 1, Bytes: 64 << 10, BBs: 1, Pointer: true, Tag: 1})
		n.Post(0, Msg{Dst: 1, Bytes: 8, BBs: 1, Tag: 2})
		n.Doorbell(e, 0, 0)
		e.Run()
		if len(s.delivered) != 2 {
			t.Fatalf("datagram %v: %d deliveries, want 2", dgram, len(s.delivered))
		}
		first := s.delivered[0]
		if want := int64(1); !dgram && first != want {
			t.Errorf("RC queue delivered message %d first, want %d (in order)", first, want)
		}
		if dgram {
			if first != 2 {
				t.Fatalf("datagram queue delivered message %d first, want the small one (2)", first)
			}
			// The large write's payload read alone (a DMA round trip and
			// 64 KiB over PCIe) separates them at least.
			if gap := s.at[1] - s.at[2]; gap < p.DMARead+p.PCIeTime(64<<10) {
				t.Errorf("small write landed %v before the large one, want at least its payload read %v", gap, p.DMARead+p.PCIeTime(64<<10))
			}
		}
	}
}

// Two tiers, a sender's flows hashed onto one spine and another sender
// loading that spine: sprayed packets take the spines whose links free
// first, so the contended flow's messages complete sooner and in another
// order than with one path, and every message still arrives once.
func TestDatagramSprayChangesCompletionOrder(t *testing.T) {
	t.Parallel()
	run := func(paths int) *orderSink {
		prof := profile.MustLoad("p-ib")
		for name, v := range map[string]float64{"topo.tiers": 2, "topo.leaf_radix": 4, "topo.oversubscription": 1} {
			if err := prof.SetValue(name, v, "test"); err != nil {
				t.Fatal(err)
			}
		}
		e := &sim.Engine{}
		s := &orderSink{at: map[int64]sim.Time{}}
		f := NewFabric(e, NewNICParams(prof), 8, 4, s)
		f.Datagram(paths)
		// One GPU a node: nodes 0-1 on leaf 0, 2-3 on leaf 1, ...
		f.Place(1)
		tag := int64(0)
		for src := range 4 {
			for q := range 4 {
				for range 8 {
					tag++
					f.NICs[src].Post(q, Msg{Dst: int32(4 + (src+q)%4), Bytes: 32 << 10, BBs: 1, Pointer: true, Tag: tag})
				}
				f.NICs[src].Doorbell(e, 0, q)
			}
		}
		e.Run()
		if len(s.delivered) != int(tag) || len(s.cqes) != int(tag) {
			t.Fatalf("paths %d: %d deliveries and %d completions of %d messages", paths, len(s.delivered), len(s.cqes), tag)
		}
		seen := map[int64]bool{}
		for _, m := range s.delivered {
			if seen[m] {
				t.Fatalf("paths %d: message %d delivered twice", paths, m)
			}
			seen[m] = true
		}
		return s
	}
	one, many := run(1), run(16)
	same := true
	for i := range one.cqes {
		if one.cqes[i] != many.cqes[i] {
			same = false
			break
		}
	}
	if same {
		t.Fatal("spraying over 16 paths completed the messages in the order one path did")
	}
	last := func(s *orderSink) sim.Time {
		var m sim.Time
		for _, v := range s.at {
			m = max(m, v)
		}
		return m
	}
	if a, b := last(one), last(many); b > a {
		t.Errorf("sprayed messages all landed by %v, later than on one path each (%v)", b, a)
	}
}
