package moe

import (
	"moebench/fault"
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// phaseFaults is what a phase's transports are handed of the layer's
// faults. The layer's clock starts at dispatch's launch; combine follows
// dispatch on it, from the moment its slowest rank is ready, as a
// layer's combine follows its dispatch (a flapping link is down at the
// same instant of the layer whichever phase it hits). Only flaps read
// the clock, and a plan that flaps runs the phases in turn (RunLayer),
// so that dispatch's end is known when combine starts.
type phaseFaults struct {
	plan *fault.Plan // the layer's
	salt uint64      // tells this phase's draws from the other's
	prev *Phase      // the phase before this one on the layer's clock
	// opened counts the transports opened for the phase (normal mode's
	// notify step opens one before dispatch's), each with draws of its own.
	opened uint64
	// at is when, on the phase's engine, its transport failed.
	at sim.Time
}

// The phases' salts.
const (
	saltDispatch = 1
	saltCombine  = 2
)

// setPhaseFaults hands res's phases the layer's faults.
func setPhaseFaults(cfg *LayerConfig, res *Result) {
	if cfg.Faults.Empty() {
		return
	}
	res.Faults = cfg.Faults
	res.Dispatch.faults = phaseFaults{plan: cfg.Faults, salt: saltDispatch}
	res.Combine.faults = phaseFaults{plan: cfg.Faults, salt: saltCombine, prev: &res.Dispatch}
}

// flaps reports whether a link of p goes down: the phases then run in
// turn (see phaseFaults).
func flaps(p *fault.Plan) bool {
	if p == nil {
		return false
	}
	for _, l := range p.Links {
		if l.Flaps() {
			return true
		}
	}
	return false
}

// faultEnv gives env the faults of phase ph, whose kernels launch at
// origin on env's engine; the first failure its transport reports is
// the phase's, and stops the phase's engine.
func faultEnv(env *transport.Env, ph *Phase, origin sim.Time) {
	pf := &ph.faults
	if pf.plan.Empty() {
		return
	}
	start := -origin
	if pf.prev != nil && flaps(pf.plan) {
		// Only a flap reads the clock, and only then does the previous
		// phase end before this one starts (the phases run in turn).
		start += sim.Time(pf.prev.Time.Max * float64(sim.Microsecond))
	}
	pf.opened++
	env.Faults = pf.plan.ForPhase(pf.salt<<8|pf.opened, start)
	e := env.E
	env.Fail = func(f *fault.Failure) {
		if ph.Failure == nil {
			// The phase's time starts at its kernels' launch, after any
			// head start the background had: so does the failure's.
			g := *f
			g.At = max(0, f.At-origin)
			ph.Failure, pf.at = &g, e.Now()
		}
		e.Stop()
	}
}

// failed reports whether the phase's transport failed, and if so marks
// the ranks not ready by then as ready at the failure, from which the
// phase's summaries read when it stopped. ready says whether a rank was.
func (ph *Phase) failed(ready func(r int) bool) bool {
	if ph.Failure == nil {
		return false
	}
	for r := range ph.Ranks {
		if !ready(r) {
			rt := &ph.Ranks[r]
			rt.Ready = max(rt.Ready, ph.faults.at)
		}
	}
	return true
}

// Failed is the phase that failed under the layer's faults ("dispatch"
// or "combine") and its failure, or "" and nil.
func (r *Result) Failed() (string, *fault.Failure) {
	switch {
	case r.Dispatch.Failure != nil:
		return "dispatch", r.Dispatch.Failure
	case r.Combine.Failure != nil:
		return "combine", r.Combine.Failure
	}
	return "", nil
}

// slowRanks gives g the slow ranks of p: each has GPU costs of its own,
// Factor times the GPU's.
func (g *gpuModel) slowRanks(p *fault.Plan, ranks int) {
	if p == nil || len(p.Slow) == 0 {
		return
	}
	g.slow = make([]float64, ranks)
	g.slowCosts = make([]*hw.GPUCosts, ranks)
	for r := range ranks {
		g.slow[r] = 1
	}
	for _, s := range p.Slow {
		if s.Rank >= ranks {
			continue
		}
		g.slow[s.Rank] = s.Factor
		c := g.costs
		for _, t := range []*sim.Time{&c.Reserve, &c.Atomic, &c.Store16, &c.StoreDrain, &c.L2Load, &c.FenceGPU,
			&c.FenceSCGPU, &c.ReleaseSys, &c.FenceSys, &c.MMIOStore, &c.Handoff, &c.CQPoll, &c.QuietQP, &c.StoreSlot, &c.PollGap} {
			*t = scale(*t, s.Factor)
		}
		g.slowCosts[s.Rank] = &c
	}
}

// costsOf is rank's GPU costs: its own when it is slow.
func (g *gpuModel) costsOf(rank int) *hw.GPUCosts {
	if g.slowCosts != nil && g.slowCosts[rank] != nil {
		return g.slowCosts[rank]
	}
	return &g.costs
}

// on is d of kernel work as rank's GPU takes it.
func (g *gpuModel) on(rank int, d sim.Time) sim.Time {
	if g.slow == nil {
		return d
	}
	return scale(d, g.slow[rank])
}

// bytesOn is a copy of b bytes as rank's GPU draws on its bandwidth: a
// slow GPU's copies hold it Factor times as long.
func (g *gpuModel) bytesOn(rank int, b int64) int64 {
	if g.slow == nil || g.slow[rank] == 1 {
		return b
	}
	return int64(float64(b) * g.slow[rank])
}

func scale(d sim.Time, f float64) sim.Time {
	if f == 1 {
		return d
	}
	return sim.Time(float64(d) * f)
}

// notifyFailed reports whether normal mode's notify step failed, which
// fails dispatch before its kernels launch: every rank stops at the
// failure.
func (ph *Phase) notifyFailed(ranks int) bool {
	if ph.Failure == nil {
		return false
	}
	ph.Ranks = make([]RankTiming, ranks)
	ph.failed(func(int) bool { return false })
	ph.finish(nil, 0)
	return true
}
