package moe

import (
	"fmt"

	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// Background is other traffic on the GPUs while the layer runs: CTAs per
// rank, each one warp streaming writes to the rank's peers in turn, from
// the start of a phase until every rank is ready. Shared background posts
// on the layer's own channels (the transport maps them to the same
// queues); reserved background posts on channels beyond the layer's, so
// that a transport with enough queues per peer isolates it. The zero value
// is no background.
type Background struct {
	CTAs     int  // background CTAs per rank
	Threads  int  // posting threads per CTA; 0 means DefaultBackgroundThreads
	Bytes    int  // bytes per write
	Reserved bool // own queues instead of the layer's
	Queues   int  // reserved queues per peer; 0 means 1
}

// DefaultBackgroundThreads is how many threads of a background CTA post
// writes, as in the paper's loaded-RTT runs (Table 11: eight threads per
// CTA).
const DefaultBackgroundThreads = 8

// BackgroundWarmup is how long the background runs before the layer's
// kernels launch, so that the layer meets queues in their loaded steady
// state (rings and send queues filled), as the paper's probes do.
const BackgroundWarmup = 200 * sim.Microsecond

// origin is when the layer starts: after the warm-up when there is
// background traffic.
func (b Background) origin() sim.Time {
	if b.CTAs > 0 {
		return BackgroundWarmup
	}
	return 0
}

func (b Background) threads() int {
	if b.Threads > 0 {
		return b.Threads
	}
	return DefaultBackgroundThreads
}

// Validate reports an unusable background.
func (b Background) Validate() error {
	switch {
	case b.CTAs < 0:
		return fmt.Errorf("CTAs: %d is negative", b.CTAs)
	case b.CTAs > 0 && b.Bytes < 1:
		return fmt.Errorf("bytes: %d per write, want at least 1", b.Bytes)
	case b.Bytes > hw.MaxMsgBytes:
		return fmt.Errorf("bytes: %d per write, more than the %d B one message carries (InfiniBand's largest message is 2^31 B)", b.Bytes, int64(hw.MaxMsgBytes))
	case b.Queues < 0:
		return fmt.Errorf("queues: %d is negative", b.Queues)
	case b.Threads < 0 || b.Threads > 1024:
		return fmt.Errorf("threads: %d per CTA, want 0 (default) to 1024", b.Threads)
	case b.CTAs > 1<<16:
		return fmt.Errorf("CTAs: %d per rank is more than a GPU holds", b.CTAs)
	}
	return nil
}

// String describes the background.
func (b Background) String() string {
	if b.CTAs == 0 {
		return "none"
	}
	q := "shared queues"
	if b.Reserved {
		// Each mechanism reserves its own kind of queue: RC QPs per peer,
		// DCIs per NIC, proxy rings per rank.
		q = fmt.Sprintf("%d reserved queue(s) beside the layer's (QPs per peer, DCIs per NIC, proxy rings)", b.queues())
	}
	return fmt.Sprintf("%d CTAs/rank × %d threads streaming %d B writes, %s", b.CTAs, b.threads(), b.Bytes, q)
}

func (b Background) queues() int { return max(1, b.Queues) }

// tagBackground marks background ops; the low bits are the warp index.
const tagBackground = int64(1) << 62

// bgRunner drives the background warps of one phase.
type bgRunner struct {
	cfg       Background
	conn      transport.Conn
	id        sim.HandlerID
	warps     []transport.Warp
	sms       []hw.SM
	sent      []int32
	ranks     int
	layerCh   int
	stopped   bool
	delivered int64
}

func newBackground(e *sim.Engine, cfg Background, conn transport.Conn, g *gpuModel, ranks, layerChannels int) *bgRunner {
	if cfg.CTAs == 0 || ranks < 2 {
		return nil
	}
	b := &bgRunner{cfg: cfg, conn: conn, ranks: ranks, layerCh: max(1, layerChannels)}
	per := cfg.CTAs * cfg.threads()
	n := ranks * per
	b.warps = make([]transport.Warp, n)
	b.sms = make([]hw.SM, n)
	b.sent = make([]int32, n)
	b.id = e.Register(b)
	for i := range b.warps {
		b.sms[i].Lanes = 1
		b.warps[i] = transport.Warp{Rank: int32(i / per), ID: int32(i),
			T: hw.NewThread(g.costsOf(i/per), &b.sms[i]), Resume: b.resume}
		e.At(0, b.id, 0, int64(i))
	}
	return b
}

// Handle posts warp arg's next write.
func (b *bgRunner) Handle(e *sim.Engine, _ int32, arg int64) {
	if b.stopped {
		return
	}
	w := &b.warps[arg]
	cta := (int(arg) / b.cfg.threads()) % b.cfg.CTAs
	i := int(b.sent[arg])
	b.sent[arg]++
	dst := (int(w.Rank) + 1 + (cta+i)%(b.ranks-1)) % b.ranks
	ch := cta % b.layerCh
	if b.cfg.Reserved {
		ch = b.layerCh + cta%b.cfg.queues()
	}
	b.conn.Post(e, w, transport.Op{Src: int(w.Rank), Dst: dst, Channel: ch, Bytes: b.cfg.Bytes, Flush: true, NIC: true, Tag: tagBackground | arg})
}

func (b *bgRunner) resume(e *sim.Engine, w *transport.Warp) {
	if !b.stopped {
		e.At(max(w.T.T, e.Now()), b.id, 0, int64(w.ID))
	}
}

func (b *bgRunner) stop() {
	if b != nil {
		b.stopped = true
	}
}

func (b *bgRunner) count() int64 {
	if b == nil {
		return 0
	}
	return b.delivered
}
