package proxy

import (
	"fmt"
	"slices"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// LoadedConfig is the loaded round trip of Fig. 6 / Table 11: an 8 B
// probe ping-pongs between two ranks while background CTAs on both ranks
// stream 8 B writes to the other one through the same proxy.
type LoadedConfig struct {
	Proxy Config
	// BackgroundCTAs per rank, each with ThreadsPerCTA producer threads
	// streaming writes back to back.
	BackgroundCTAs int
	ThreadsPerCTA  int
	// Reserved gives the probe a ring of its own (ring 0, which the
	// background does not use); otherwise the probe shares ring 0 with
	// the background CTAs mapped to it.
	Reserved bool
	Probes   int      // round trips measured; the result is their median
	Warmup   sim.Time // background alone before the first probe
}

// LoadedResult is the probe's round trips and the background rate the
// initiator carried while they ran.
type LoadedResult struct {
	RTT    sim.Time   // median
	RTTs   []sim.Time // each probe's, in order
	BgRate float64    // M msg/s of background sent by the probe's rank during the probes
}

// Validate reports a configuration the model cannot run.
func (c LoadedConfig) Validate() error {
	if err := c.Proxy.Validate(); err != nil {
		return err
	}
	switch {
	case c.BackgroundCTAs < 0 || c.ThreadsPerCTA < 1:
		return fmt.Errorf("background CTAs must be non-negative and threads per CTA at least 1 (got %d, %d)", c.BackgroundCTAs, c.ThreadsPerCTA)
	case c.ThreadsPerCTA > hw.MaxThreads/max(1, c.BackgroundCTAs):
		return fmt.Errorf("background: %d CTAs of %d threads is more than the %d threads the model takes", c.BackgroundCTAs, c.ThreadsPerCTA, hw.MaxThreads)
	case c.Reserved && c.Proxy.Rings < 2:
		return fmt.Errorf("a reserved probe ring needs at least 2 rings (got %d)", c.Proxy.Rings)
	case c.BackgroundCTAs > 0 && c.Proxy.Handoff == Tuned:
		return fmt.Errorf("background CTAs share rings: the tuned handoff has one producer per ring (use the baseline)")
	case c.Probes < 1:
		return fmt.Errorf("probes must be at least 1 (got %d)", c.Probes)
	}
	return nil
}

const (
	kindBulk int64 = iota
	kindProbe
	kindReply
)

type loadedRun struct {
	m        *model
	cfg      LoadedConfig
	a, b     hw.Thread
	pa, pb   *producer
	start    sim.Time
	res      LoadedResult
	bulkSent int64 // background writes rank 0 sent, counted at delivery
	t0, n0   int64
	stopped  bool
}

// Loaded runs the loaded round-trip experiment.
func Loaded(p *profile.Profile, cfg LoadedConfig) (LoadedResult, error) {
	if err := cfg.Validate(); err != nil {
		return LoadedResult{}, err
	}
	e := &sim.Engine{}
	s := &loadedRun{cfg: cfg, m: newModel(e, p, cfg.Proxy, 2)}
	m := s.m
	c := &m.c
	tuned := cfg.Proxy.Handoff == Tuned
	R := cfg.Proxy.Rings
	for node := range 2 {
		sms := make([]hw.SM, cfg.BackgroundCTAs)
		for cta := range cfg.BackgroundCTAs {
			sms[cta].Lanes = 1
			ri := cta % R
			if cfg.Reserved {
				ri = 1 + cta%(R-1)
			}
			r := m.nodes[node].rings[ri]
			for range cfg.ThreadsPerCTA {
				th0 := hw.NewThread(&c.gpu, &sms[cta])
				th := &th0
				var pr *producer
				pr = m.newProducer(th, func(e *sim.Engine, _ *producer) {
					if !s.stopped {
						pr.post(e, r, m.newOp(node, 1-node, 8, false, kindBulk), tuned)
					}
				})
				pr.post(e, r, m.newOp(node, 1-node, 8, false, kindBulk), tuned)
			}
		}
	}
	sms := []hw.SM{{Lanes: 1}, {Lanes: 1}}
	s.a = hw.NewThread(&c.gpu, &sms[0])
	s.a.T = cfg.Warmup
	s.b = hw.NewThread(&c.gpu, &sms[1])
	nop := func(*sim.Engine, *producer) {}
	s.pa, s.pb = m.newProducer(&s.a, nop), m.newProducer(&s.b, nop)
	m.onDeliver = s.delivered
	start := e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, _ int64) {
		s.t0, s.n0 = int64(e.Now()), s.bulkSent
		s.next(e)
	}))
	e.At(cfg.Warmup, start, 0, 0)
	e.Run()
	if len(s.res.RTTs) != cfg.Probes {
		return LoadedResult{}, fmt.Errorf("model stalled after %d of %d probes", len(s.res.RTTs), cfg.Probes)
	}
	sorted := slices.Clone(s.res.RTTs)
	slices.Sort(sorted)
	s.res.RTT = sorted[len(sorted)/2]
	return s.res, nil
}

func (s *loadedRun) next(e *sim.Engine) {
	s.start = s.a.T
	op := s.m.newOp(0, 1, 8, false, kindProbe)
	s.pa.post(e, s.m.nodes[0].rings[0], op, s.m.cfg.Handoff == Tuned)
}

func (s *loadedRun) delivered(e *sim.Engine, op int32, msg hw.MsgTimes) {
	o := s.m.op(op)
	c := &s.m.c
	switch o.user {
	case kindBulk:
		if o.src == 0 {
			s.bulkSent++
		}
	case kindProbe:
		s.b.T = max(s.b.T, c.l2Detect(msg.Visible))
		reply := s.m.newOp(1, 0, 8, false, kindReply)
		s.pb.post(e, s.m.nodes[1].rings[0], reply, s.m.cfg.Handoff == Tuned)
	case kindReply:
		s.a.T = max(s.a.T, c.l2Detect(msg.Visible))
		s.res.RTTs = append(s.res.RTTs, s.a.T-s.start)
		if len(s.res.RTTs) == s.cfg.Probes {
			if span := sim.Time(int64(s.a.T) - s.t0); span > 0 {
				s.res.BgRate = float64(s.bulkSent-s.n0) / span.Us()
			}
			s.stopped = true
			e.Stop()
			return
		}
		s.next(e)
	}
}
