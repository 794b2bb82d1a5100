package gda

import (
	"testing"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// driver posts a fixed list of ops from one warp, one after another.
type driver struct {
	conn transport.Conn
	ops  []transport.Op
	next int
	id   sim.HandlerID
}

func (d *driver) Handle(e *sim.Engine, _ int32, _ int64) {}

func runConn(t *testing.T, cfg Config, ranks, perNode int, nvlink bool, ops [][]transport.Op) []transport.Delivery {
	t.Helper()
	got, _ := runConnLead(t, cfg, ranks, perNode, nvlink, ops, true)
	return got
}

// runConnLead is runConn that can leave out the conn's doorbell lead,
// and also returns the events run.
func runConnLead(t *testing.T, cfg Config, ranks, perNode int, nvlink bool, ops [][]transport.Op, lead bool) ([]transport.Delivery, uint64) {
	t.Helper()
	e := &sim.Engine{}
	var got []transport.Delivery
	env := &transport.Env{E: e, Profile: profile.MustLoad("p-ib"), Ranks: ranks, GPUsPerNode: perNode, NVLink: nvlink,
		Delivered: func(_ *sim.Engine, d transport.Delivery) { got = append(got, d) }}
	cn, err := cfg.Transport().Open(env)
	if err != nil {
		t.Fatal(err)
	}
	if !lead {
		cn.(*conn).fab.DoorbellLeadOf(nil)
	}
	conn := cn
	gpu := hw.NewGPUCosts(env.Profile)
	// ops[i] is warp i's list; a warp posts from its first op's rank.
	sms := make([]hw.SM, len(ops))
	for i, list := range ops {
		sms[i].Lanes = 1
		r := i
		if len(list) > 0 {
			r = list[0].Src
		}
		k := 0
		w := &transport.Warp{Rank: int32(r), T: hw.NewThread(&gpu, &sms[i])}
		var post sim.HandlerID
		w.Resume = func(e *sim.Engine, w *transport.Warp) {
			if k < len(list) {
				e.At(w.T.T, post, 0, 0)
			}
		}
		post = e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) {
			op := list[k]
			k++
			conn.Post(e, w, op)
		}))
		if len(list) > 0 {
			e.At(0, post, 0, 0)
		}
	}
	e.Run()
	return got, e.Handled()
}

// A queue with nothing reserved and unpublished cannot be rung before a
// new post's reservation and doorbell: its doorbell handling then ends
// without an event, and every delivery is exactly as with the event.
// Doorbells every 2 WQEs and two warps on one queue serve some queues
// past the lead or with a post reserved, so both kinds run.
func TestConnDoorbellLeadIsExact(t *testing.T) {
	t.Parallel()
	const ranks = 4
	// Three warps a rank: the first posts to every queue in turn, the
	// others back to back on one queue, whose doorbells then come while
	// it is busy; a flushing atomic on each queue rings its last batch.
	ops := make([][]transport.Op, 3*ranks)
	for r := range ranks {
		for i := range 40 {
			ops[r] = append(ops[r], transport.Op{Src: r, Dst: (r + 1 + i%(ranks-1)) % ranks, Channel: i % 2, Bytes: 7408, Tag: int64(i)})
			for w := 1; w <= 2; w++ {
				ops[w*ranks+r] = append(ops[w*ranks+r], transport.Op{Src: r, Dst: (r + 1) % ranks, Bytes: 7408, Tag: int64(w*100 + i), Flush: true})
			}
		}
		for i := range 2 * (ranks - 1) {
			ops[r] = append(ops[r], transport.Op{Src: r, Dst: (r + 1 + i/2) % ranks, Channel: i % 2, Bytes: 8, Atomic: true, Flush: true, Tag: int64(200 + i)})
		}
	}
	n := ranks * (120 + 2*(ranks-1))
	cfg := DefaultConfig()
	cfg.QPsPerPeer = 2
	cfg.PerDoorbell = 2
	with, evWith := runConnLead(t, cfg, ranks, ranks, false, ops, true)
	without, evWithout := runConnLead(t, cfg, ranks, ranks, false, ops, false)
	if len(with) != len(without) || len(with) != n {
		t.Fatalf("%d and %d deliveries, want %d", len(with), len(without), n)
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

func TestConnDeliversEveryOpOnceInPathOrder(t *testing.T) {
	t.Parallel()
	const ranks = 4
	ops := make([][]transport.Op, ranks)
	n := 0
	for r := range ranks {
		for i := range 50 {
			dst := (r + 1 + i%(ranks-1)) % ranks
			ops[r] = append(ops[r], transport.Op{Src: r, Dst: dst, Channel: i % 3, Bytes: 7408, Tag: int64(n)})
			n++
		}
		// As DeepEP does, a trailing atomic on each used QP flushes its
		// last doorbell batch.
		for i := range 3 {
			dst := (r + 1 + i) % ranks
			ops[r] = append(ops[r], transport.Op{Src: r, Dst: dst, Channel: i, Bytes: 8, Atomic: true, Flush: true, Tag: int64(n)})
			n++
		}
	}
	for _, nv := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.QPsPerPeer = 3
		cfg.PerDoorbell = 4
		got := runConn(t, cfg, ranks, 2, nv, ops)
		seen := map[int64]int{}
		var nvl int
		for _, d := range got {
			seen[d.Op.Tag]++
			tm := d.Times
			if tm.NVLink {
				nvl++
				continue
			}
			seq := []sim.Time{tm.IssueStart, tm.Posted, tm.Served, tm.Sent, tm.Arrived, tm.Visible}
			for i := 1; i < len(seq); i++ {
				if seq[i] < seq[i-1] {
					t.Fatalf("op %d: times out of order: %+v", d.Op.Tag, tm)
				}
			}
		}
		if len(seen) != n {
			t.Fatalf("nvlink=%v: %d distinct ops delivered, want %d", nv, len(seen), n)
		}
		for tag, c := range seen {
			if c != 1 {
				t.Fatalf("op %d delivered %d times", tag, c)
			}
		}
		if nv != (nvl > 0) {
			t.Fatalf("nvlink=%v but %d NVLink deliveries", nv, nvl)
		}
	}
}

// Peers all on one node with NVLink on never touch the NIC: their posts
// take no message and no send queue.
func TestConnNVLinkOnlyTakesNoMessage(t *testing.T) {
	t.Parallel()
	const ranks = 4
	ops := make([][]transport.Op, ranks)
	for r := range ranks {
		for i := range 3 {
			dst := (r + 1 + i) % ranks
			ops[r] = append(ops[r], transport.Op{Src: r, Dst: dst, Bytes: 7408, Tag: int64(r*3 + i)})
		}
	}
	got := runConn(t, DefaultConfig(), ranks, ranks, true, ops)
	if len(got) != 3*ranks {
		t.Fatalf("%d deliveries, want %d", len(got), 3*ranks)
	}
	for _, d := range got {
		if !d.Times.NVLink {
			t.Errorf("op %d did not go over NVLink", d.Op.Tag)
		}
	}
}

// An op that asks for the NIC takes it to a peer NVLink reaches, and is
// reported back as posted; the others beside it still take NVLink.
func TestConnNICOpSkipsNVLink(t *testing.T) {
	t.Parallel()
	const ranks = 4
	ops := make([][]transport.Op, ranks)
	want := map[int64]transport.Op{}
	for r := range ranks {
		for i := range 6 {
			op := transport.Op{Src: r, Dst: (r + 1 + i%3) % ranks, Channel: i % 2, Bytes: 8, Flush: true, NIC: i%2 == 0, Tag: int64(r*6 + i)}
			ops[r] = append(ops[r], op)
			want[op.Tag] = op
		}
	}
	got := runConn(t, DefaultConfig(), ranks, ranks, true, ops)
	if len(got) != len(want) {
		t.Fatalf("%d deliveries, want %d", len(got), len(want))
	}
	for _, d := range got {
		if d.Op != want[d.Op.Tag] {
			t.Errorf("op %d delivered as %+v, posted as %+v", d.Op.Tag, d.Op, want[d.Op.Tag])
		}
		if d.Times.NVLink == d.Op.NIC {
			t.Errorf("op %d (NIC %v) delivered with NVLink %v", d.Op.Tag, d.Op.NIC, d.Times.NVLink)
		}
	}
}

func TestConnConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{QPsPerPeer: 0, Depth: 8, PerDoorbell: 1}, {QPsPerPeer: 1, Depth: 4, PerDoorbell: 8}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: want an error", c)
		}
	}
}
