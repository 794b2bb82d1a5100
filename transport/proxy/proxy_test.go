package proxy

import (
	"fmt"
	"strings"
	"testing"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := Config{Workers: 4, Rings: 32, Batch: 16}
	if err := ok.Validate(); err != nil {
		t.Fatalf("T4/R32/B16: %v", err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no workers", Config{Workers: 0, Rings: 1, Batch: 1}, "workers must be at least 1"},
		{"no rings", Config{Workers: 1, Rings: 0, Batch: 1}, "rings must be at least 1"},
		{"idle workers", Config{Workers: 4, Rings: 2, Batch: 1}, "2 rings leave some of 4 workers without a ring"},
		{"no batch", Config{Workers: 1, Rings: 1, Batch: 0}, "batch must be at least 1"},
		{"all reserved", Config{Workers: 1, Rings: 2, Batch: 1, ReservedRings: 2}, "reserved rings must leave at least one"},
		{"all background", Config{Workers: 1, Rings: 2, Batch: 1, BackgroundRings: 2}, "background rings must leave at least one"},
		{"reserved past background", Config{Workers: 1, Rings: 3, Batch: 1, BackgroundRings: 1, ReservedRings: 2}, "reserved rings must leave at least one of 2"},
		{"short send queue", Config{Workers: 1, Rings: 1, Batch: 32, SQDepth: 16}, "send-queue depth 16 cannot hold a chain of 32"},
		{"bad handoff", Config{Workers: 1, Rings: 1, Batch: 1, Handoff: 7}, "unknown handoff 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseNames(t *testing.T) {
	t.Parallel()
	if h, err := ParseHandoff("tuned"); err != nil || h != Tuned {
		t.Errorf("ParseHandoff(tuned) = %v, %v", h, err)
	}
	if _, err := ParseCPUState("lukewarm"); err == nil || !strings.Contains(err.Error(), "cold") {
		t.Errorf("unknown state error should list the known ones: %v", err)
	}
	if c, err := ParseCompletion("gpu"); err != nil || c != CompletionGPU {
		t.Errorf("ParseCompletion(gpu) = %v, %v", c, err)
	}
}

func TestStreamRejectsSharedTunedRings(t *testing.T) {
	t.Parallel()
	_, err := Stream(profile.MustLoad("p-ib"), StreamConfig{Proxy: Config{Workers: 1, Rings: 1, Batch: 1, Handoff: Tuned}, ThreadsPerRing: 2, Bytes: 8})
	if err == nil || !strings.Contains(err.Error(), "one producer per ring") {
		t.Fatalf("error %v", err)
	}
}

// The model is deterministic: the same run twice gives the same figures.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	a, err := SingleOp(p, Single(Baseline, CompletionHost, Cold), 4)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SingleOp(p, Single(Baseline, CompletionHost, Cold), 4)
	if a != b {
		t.Errorf("single-op differs between runs: %+v vs %+v", a, b)
	}
	cfg := LoadedConfig{Proxy: Config{Workers: 2, Rings: 8, Batch: 16, State: Warm}, BackgroundCTAs: 16, ThreadsPerCTA: 8, Probes: 3, Warmup: 50 * sim.Microsecond}
	x, err := Loaded(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	y, _ := Loaded(p, cfg)
	if x.RTT != y.RTT || x.BgRate != y.BgRate || fmt.Sprint(x.RTTs) != fmt.Sprint(y.RTTs) {
		t.Errorf("loaded run differs between runs: %+v vs %+v", x, y)
	}
}

// The tuned handoff's single-operation figures are ordered as the paper
// has them: enqueue, then put+completion, then a round trip.
func TestSingleOpOrdering(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	for _, cfg := range []Config{Single(Baseline, CompletionHost, Cold), Single(Tuned, CompletionGPU, Warm)} {
		r, err := SingleOp(p, cfg, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !(0 < r.Issue && r.Issue < r.PutC && r.PutC < r.RTT) {
			t.Errorf("%v: issue %v, put+c %v, RTT %v", cfg, r.Issue, r.PutC, r.RTT)
		}
	}
}

type sentOp struct {
	op    transport.Op
	seen  int
	times transport.Times
}

// recordDeliveries counts each delivery against the op posted with its
// tag, which it must equal, reported when it is visible.
func recordDeliveries(t *testing.T, got map[int64]*sentOp) func(*sim.Engine, transport.Delivery) {
	return func(e *sim.Engine, d transport.Delivery) {
		s := got[d.Op.Tag]
		if s == nil {
			t.Errorf("delivery of unknown tag %d", d.Op.Tag)
			return
		}
		s.seen++
		s.times = d.Times
		if d.Op != s.op {
			t.Errorf("tag %d delivered as %+v, posted as %+v", d.Op.Tag, d.Op, s.op)
		}
		if e.Now() != d.Times.Visible {
			t.Errorf("tag %d reported at %v, visible at %v", d.Op.Tag, e.Now(), d.Times.Visible)
		}
	}
}

// TestConnDeliversEveryOpOnce drives the Conn from warps on four ranks,
// with writes and atomics, both handoffs and reserved rings, and checks
// that every Op is delivered exactly once, as it was posted, with ordered
// timestamps.
func TestConnDeliversEveryOpOnce(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Workers: 2, Rings: 8, Batch: 16, Handoff: Baseline, ReservedRings: 2},
		{Workers: 1, Rings: 4, Batch: 4, Handoff: Tuned, Completion: CompletionGPU, State: Warm, RingSlots: 8, SQDepth: 8},
		// Channels from 5 on (the last warps' and the wrap) on rings of
		// their own, and on QPs of their own.
		{Workers: 2, Rings: 6, Batch: 8, Handoff: Baseline, BackgroundRings: 2, BackgroundChannel0: 5, RingSlots: 16, SQDepth: 8},
		// A ring of more than one page that wraps, a page only part used.
		{Workers: 1, Rings: 2, Batch: 3, Handoff: Baseline, RingSlots: ringPage + 6, SQDepth: 5},
	} {
		t.Run(cfg.String(), func(t *testing.T) {
			t.Parallel()
			const ranks, warpsPerRank, perWarp = 4, 6, 40
			e := &sim.Engine{}
			got := map[int64]*sentOp{}
			env := &transport.Env{E: e, Profile: profile.MustLoad("p-ib"), Ranks: ranks, GPUsPerNode: 4,
				Delivered: recordDeliveries(t, got)}
			conn, err := New(cfg).Open(env)
			if err != nil {
				t.Fatal(err)
			}
			gpu := hw.NewGPUCosts(env.Profile)
			sms := make([]hw.SM, ranks*warpsPerRank)
			var tag int64
			for r := range ranks {
				for i := range warpsPerRank {
					w := &transport.Warp{Rank: int32(r), ID: int32(i)}
					w.T = hw.NewThread(&gpu, &sms[r*warpsPerRank+i])
					w.T.SM.Lanes = 1
					left := perWarp
					post := func(e *sim.Engine, w *transport.Warp) {
						if left == 0 {
							return
						}
						left--
						tag++
						op := transport.Op{Src: r, Dst: (r + 1 + int(tag)%(ranks-1)) % ranks, Channel: i + int(tag)%3,
							Bytes: []int{8, 7168, 512, 0}[tag%4], Atomic: tag%5 == 0, Flush: tag%7 == 0, NIC: tag%3 == 1, Tag: tag}
						got[tag] = &sentOp{op: op}
						conn.Post(e, w, op)
					}
					w.Resume = post
					e.At(0, e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) { post(e, w) })), 0, 0)
				}
			}
			e.Run()
			if len(got) != ranks*warpsPerRank*perWarp {
				t.Fatalf("posted %d ops, want %d", len(got), ranks*warpsPerRank*perWarp)
			}
			for tag, s := range got {
				if s.seen != 1 {
					t.Errorf("tag %d delivered %d times", tag, s.seen)
					continue
				}
				x := s.times
				seq := []sim.Time{x.IssueStart, x.IssueEnd, x.Posted, x.Served, x.Sent, x.Arrived, x.Visible}
				for i := 1; i < len(seq); i++ {
					if seq[i] < seq[i-1] {
						t.Errorf("tag %d: times out of order: %+v", tag, x)
						break
					}
				}
			}
			res := conn.Resources()
			// Every rank wrote to its three peers.
			if res.Own[RingsResource] != cfg.Rings || res.Own[WorkersResource] != cfg.Workers || res.QPsPerNIC != cfg.Workers*cfg.classes()*ranks ||
				res.ActiveConnPerNIC != 3*cfg.Workers {
				t.Errorf("resources %+v", res)
			}
		})
	}
}

func TestRingOfChannel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg    Config
		ch     int
		atomic bool
		want   int
	}{
		{Config{Rings: 4}, 6, false, 2},
		{Config{Rings: 4}, -1, false, 0},
		{Config{Rings: 4, ReservedRings: 1}, 5, false, 2},
		{Config{Rings: 4, ReservedRings: 1}, 5, true, 3},
		// 32 layer rings and one background ring from channel 144: the
		// layer keeps its 32, the background never reaches them.
		{Config{Rings: 33, BackgroundRings: 1, BackgroundChannel0: 144}, 143, false, 143 % 32},
		{Config{Rings: 33, BackgroundRings: 1, BackgroundChannel0: 144}, 144, false, 32},
		{Config{Rings: 34, BackgroundRings: 2, BackgroundChannel0: 144}, 147, true, 33},
		{Config{Rings: 6, ReservedRings: 1, BackgroundRings: 2, BackgroundChannel0: 8}, 7, true, 3},
		{Config{Rings: 6, ReservedRings: 1, BackgroundRings: 2, BackgroundChannel0: 8}, 7, false, 1},
	} {
		if got := tc.cfg.ring(tc.ch, tc.atomic); got != tc.want {
			t.Errorf("%+v: channel %d (atomic %v) on ring %d, want %d", tc.cfg, tc.ch, tc.atomic, got, tc.want)
		}
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	t.Parallel()
	env := &transport.Env{E: &sim.Engine{}, Profile: profile.MustLoad("p-ib"), Ranks: 2, Delivered: func(*sim.Engine, transport.Delivery) {}}
	if _, err := New(Config{Workers: 1, Rings: 1}).Open(env); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Fatalf("error %v", err)
	}
	// More queues than a message record numbers.
	env.Ranks = 1 << 19
	if _, err := New(Config{Workers: 4, Rings: 4, Batch: 4}).Open(env); err == nil || !strings.Contains(err.Error(), "QPs per NIC") {
		t.Fatalf("%d ranks × 4 workers: error %v", env.Ranks, err)
	}
}

func ExampleSingleOp() {
	p := profile.MustLoad("p-ib")
	for _, h := range []Handoff{Baseline, Tuned} {
		r, _ := SingleOp(p, Single(h, CompletionGPU, Cold), 4)
		fmt.Printf("%s enqueue: %.2f µs\n", h, r.Issue.Us())
	}
	// Output:
	// baseline enqueue: 2.27 µs
	// tuned enqueue: 0.13 µs
}

func BenchmarkLoadedRTT(b *testing.B) {
	b.ReportAllocs()
	p := profile.MustLoad("p-ib")
	cfg := LoadedConfig{Proxy: Config{Workers: 4, Rings: 32, Batch: 16, State: Warm}, BackgroundCTAs: 64, ThreadsPerCTA: 8, Reserved: true, Probes: 3, Warmup: 300 * sim.Microsecond}
	for b.Loop() {
		if _, err := Loaded(p, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// With NVLink on, a warp copies to its same-node peers itself, and only
// the other ops (and those asking for the NIC) pass a ring and a worker:
// each is delivered once, as posted, over the path it belongs on, and the
// warp resumes once its copy is done.
func TestConnNVLink(t *testing.T) {
	t.Parallel()
	const ranks, perNode, perWarp = 4, 2, 30
	e := &sim.Engine{}
	got := map[int64]*sentOp{}
	env := &transport.Env{E: e, Profile: profile.MustLoad("p-ib"), Ranks: ranks, GPUsPerNode: perNode, NVLink: true,
		Delivered: recordDeliveries(t, got)}
	conn, err := New(Config{Workers: 2, Rings: 4, Batch: 4, Handoff: Baseline}).Open(env)
	if err != nil {
		t.Fatal(err)
	}
	gpu := hw.NewGPUCosts(env.Profile)
	sms := make([]hw.SM, ranks)
	var tag int64
	for r := range ranks {
		w := &transport.Warp{Rank: int32(r), T: hw.NewThread(&gpu, &sms[r])}
		w.T.SM.Lanes = 1
		left := perWarp
		var last *sentOp
		post := func(e *sim.Engine, w *transport.Warp) {
			if last != nil && last.times.NVLink && e.Now() != last.times.IssueEnd {
				t.Errorf("tag %d: the warp resumed at %v, its copy ended at %v", last.op.Tag, e.Now(), last.times.IssueEnd)
			}
			if left == 0 {
				return
			}
			left--
			tag++
			op := transport.Op{Src: r, Dst: (r + 1 + int(tag)%(ranks-1)) % ranks, Channel: int(tag) % 4, Bytes: 7168,
				NIC: tag%4 == 0, Tag: tag}
			last = &sentOp{op: op}
			got[tag] = last
			conn.Post(e, w, op)
		}
		w.Resume = post
		e.At(0, e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) { post(e, w) })), 0, 0)
	}
	e.Run()
	nvl := 0
	for tag, s := range got {
		local := s.op.Src/perNode == s.op.Dst/perNode
		switch {
		case s.seen != 1:
			t.Errorf("tag %d delivered %d times", tag, s.seen)
		case s.times.NVLink != (local && !s.op.NIC):
			t.Errorf("tag %d (%d -> %d, NIC %v) delivered with NVLink %v", tag, s.op.Src, s.op.Dst, s.op.NIC, s.times.NVLink)
		}
		if s.times.NVLink {
			nvl++
		}
	}
	if len(got) != ranks*perWarp || nvl == 0 || nvl == len(got) {
		t.Fatalf("%d ops posted, %d over NVLink: want %d, some of each", len(got), nvl, ranks*perWarp)
	}
}
