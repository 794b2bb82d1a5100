package microbench

import (
	"fmt"
	"slices"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
	"moebench/transport/gda"
	"moebench/transport/preset"
)

// GDALoadedConfig is Table 11's GDAKI row: an 8 B probe ping-pongs between
// two GPUs while background CTAs on both stream 8 B writes to the other
// through GPU-initiated contexts (one RC QP to the peer each). The probe
// uses context 0; each background CTA its own, except that Shared puts
// background CTA 0 on the probe's context.
type GDALoadedConfig struct {
	Lib            gda.Config // the library preset's mechanism
	BackgroundCTAs int
	ThreadsPerCTA  int
	Shared         bool
	Probes         int
	Warmup         sim.Time
}

// GDALoadedResult is the probe's median round trip and the background
// rate its GPU carried while the probes ran.
type GDALoadedResult struct {
	RTT    sim.Time
	BgRate float64 // M msg/s
}

type gdaLoadedRun struct {
	cfg     GDALoadedConfig
	conn    transport.Conn
	id      sim.HandlerID
	bg      []transport.Warp
	probe   [2]transport.Warp
	sms     []hw.SM
	start   sim.Time // current probe's issue
	rtts    []sim.Time
	stopped bool
	bgSent  int64 // background writes from GPU 0 delivered while probing
	t0      sim.Time
	detect  func(sim.Time) sim.Time
}

// Tags: the probe, its reply, then background thread i as tagBg+i.
const (
	tagProbe int64 = iota
	tagReply
	tagBg
)

// GDALoaded runs the loaded round-trip experiment on the GDA transport.
func GDALoaded(p *profile.Profile, cfg GDALoadedConfig) (GDALoadedResult, error) {
	if cfg.BackgroundCTAs < 0 || cfg.ThreadsPerCTA < 1 || cfg.Probes < 1 {
		return GDALoadedResult{}, fmt.Errorf("gda-loaded: want background CTAs >= 0, threads per CTA >= 1, probes >= 1 (got %d, %d, %d)",
			cfg.BackgroundCTAs, cfg.ThreadsPerCTA, cfg.Probes)
	}
	lib := cfg.Lib
	lib.QPsPerPeer = cfg.BackgroundCTAs + 1 // the context pool: one per CTA and the probe's
	e := &sim.Engine{}
	r := &gdaLoadedRun{cfg: cfg}
	costs := hw.NewGPUCosts(p)
	r.detect = func(v sim.Time) sim.Time { return v + (costs.L2Load+costs.PollGap)/2 + costs.L2Load }
	var err error
	r.conn, err = lib.Transport().Open(&transport.Env{E: e, Profile: p, Ranks: 2, GPUsPerNode: 1, Delivered: r.delivered})
	if err != nil {
		return GDALoadedResult{}, fmt.Errorf("gda-loaded: %w", err)
	}
	r.id = e.Register(r)
	// One SM per CTA and one for each probe thread.
	r.sms = make([]hw.SM, 2*cfg.BackgroundCTAs+2)
	n := 2 * cfg.BackgroundCTAs * cfg.ThreadsPerCTA
	r.bg = make([]transport.Warp, n)
	for i := range r.bg {
		cta := i / cfg.ThreadsPerCTA
		sm := &r.sms[cta]
		sm.Lanes++
		r.bg[i] = transport.Warp{Rank: int32(cta % 2), ID: int32(i), T: hw.NewThread(&costs, sm), Resume: r.resumeBg}
		e.At(0, r.id, 0, int64(i))
	}
	for g := range r.probe {
		sm := &r.sms[len(r.sms)-1-g]
		sm.Lanes = 1
		r.probe[g] = transport.Warp{Rank: int32(g), ID: int32(-1 - g), T: hw.NewThread(&costs, sm), Resume: func(*sim.Engine, *transport.Warp) {}}
	}
	e.At(cfg.Warmup, r.id, 1, 0)
	e.RunUntil(cfg.Warmup + 50*sim.Millisecond)
	r.stopped = true
	if len(r.rtts) < cfg.Probes {
		return GDALoadedResult{}, fmt.Errorf("gda-loaded: %d of %d probes came back within 50 ms", len(r.rtts), cfg.Probes)
	}
	slices.Sort(r.rtts)
	res := GDALoadedResult{RTT: r.rtts[len(r.rtts)/2]}
	if span := e.Now() - r.t0; span > 0 {
		res.BgRate = float64(r.bgSent) / span.Us()
	}
	return res, nil
}

// ctx is the context (channel) background thread i posts on.
func (r *gdaLoadedRun) ctx(i int) int {
	cta := (i / r.cfg.ThreadsPerCTA) / 2 // CTA index on its GPU
	if r.cfg.Shared && cta == 0 {
		return 0
	}
	return cta + 1
}

// Handle: op 0 posts background thread arg's next write, op 1 sends the
// next probe, op 2 the reply.
func (r *gdaLoadedRun) Handle(e *sim.Engine, op int32, arg int64) {
	if r.stopped {
		return
	}
	if op == 2 {
		r.conn.Post(e, &r.probe[1], transport.Op{Src: 1, Dst: 0, Channel: 0, Bytes: 8, Flush: true, Tag: tagReply})
		return
	}
	if op == 1 {
		w := &r.probe[0]
		w.T.T = max(w.T.T, e.Now())
		r.start = w.T.T
		if r.t0 == 0 {
			r.t0 = r.start
		}
		r.conn.Post(e, w, transport.Op{Src: 0, Dst: 1, Channel: 0, Bytes: 8, Flush: true, Tag: tagProbe})
		return
	}
	w := &r.bg[arg]
	r.conn.Post(e, w, transport.Op{Src: int(w.Rank), Dst: 1 - int(w.Rank), Channel: r.ctx(int(arg)), Bytes: 8, Flush: true, Tag: tagBg + arg})
}

// resumeBg: a background thread waits for its write's completion before
// the next (put, then wait, as the paper's background CTAs run: 512
// threads carry 73-79 M msg/s, one write per put+completion each).
func (r *gdaLoadedRun) resumeBg(*sim.Engine, *transport.Warp) {}

func (r *gdaLoadedRun) delivered(e *sim.Engine, d transport.Delivery) {
	if r.stopped {
		return
	}
	switch d.Op.Tag {
	default:
		if d.Op.Src == 0 && r.t0 > 0 {
			r.bgSent++
		}
		// The completion reaches the sender about when the data is
		// visible remotely (Table 3: put+completion is about RTT/2 plus
		// the poll); the thread sees it at its next poll.
		i := d.Op.Tag - tagBg
		w := &r.bg[i]
		w.T.T = max(w.T.T, r.detect(d.Times.Visible))
		e.At(w.T.T, r.id, 0, i)
	case tagProbe:
		// The peer's probe thread sees it and answers on its context 0.
		w := &r.probe[1]
		w.T.T = max(w.T.T, r.detect(d.Times.Visible))
		e.At(w.T.T, r.id, 2, 0)
	case tagReply:
		back := r.detect(d.Times.Visible)
		r.rtts = append(r.rtts, back-r.start)
		if len(r.rtts) < r.cfg.Probes {
			r.probe[0].T.T = max(r.probe[0].T.T, back)
			e.At(back, r.id, 1, 0)
			return
		}
		r.stopped = true
	}
}

// gdaLoaded is Table 11's GDAKI row on P-IB: 64 background CTAs of eight
// threads, a 65-context pool; shared puts one background CTA on the
// probe's context.
func gdaLoaded(p *profile.Profile) ([]Row, error) {
	ps, err := preset.Get("gdaki")
	if err != nil {
		return nil, err
	}
	lib, ok := ps.Config.(gda.Config)
	if !ok {
		return nil, fmt.Errorf("preset %s: configures no GDA", ps.Name)
	}
	var rows []Row
	rtt := map[bool]float64{}
	for _, shared := range []bool{true, false} {
		r, err := GDALoaded(p, GDALoadedConfig{Lib: lib, BackgroundCTAs: 64, ThreadsPerCTA: 8, Shared: shared, Probes: 5, Warmup: 100 * sim.Microsecond})
		if err != nil {
			return nil, err
		}
		name, paper := "GDAKI, 64 background CTAs, probe context reserved", 13.9
		if shared {
			name, paper = "GDAKI, 64 background CTAs, one shares the probe's context", 27.3
		}
		rtt[shared] = r.RTT.Us()
		rows = append(rows,
			Row{"gda-loaded", name, "probe RTT p50", "µs", paper, r.RTT.Us(), "Table 11"},
			Row{"gda-loaded", name, "background carried", "M msg/s", nan, r.BgRate, ""})
	}
	rows = append(rows, Row{"gda-loaded", "GDAKI, 64 background CTAs", "RTT shared / reserved", "ratio", 27.3 / 13.9, rtt[true] / rtt[false], "Table 11"})
	return pibOnly(p, rows), nil
}
