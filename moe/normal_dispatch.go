package moe

import (
	"fmt"

	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// runNotify models the notify step: every rank writes its counts to every
// peer from one warp per channel, the receiving host sees them, then
// launches the dispatch kernel. It returns each rank's launch time.
func runNotify(cfg *LayerConfig, ph *Phase, g *gpuModel, C int) ([]sim.Time, transport.Resources, int64, error) {
	s := cfg.Routing.Shape
	R := s.Ranks
	bytes := 4 * (1 + s.LocalExperts()) // tokens for the rank + per expert
	last, res, msgs, err := notifyWrites(cfg, ph, g, C, R-1, bytes, func(r, ch, k int) (int, int, bool) {
		// Channel warp ch writes to peers ch+1, ch+1+C, ... after itself.
		off := 1 + ch + k*C
		return (r + off) % R, ch, off < R
	})
	if last == nil {
		return nil, res, msgs, err
	}
	out := make([]sim.Time, R)
	hostSee := sim.Ns(cfg.Profile.Get("pcie.dma_write_ns"))
	for r := range R {
		out[r] = g.pollDetect(last[r]) + hostSee + hostLaunch
	}
	return out, res, msgs, nil
}

// notifyWrites runs a notify step's count writes of bytes each: perRank
// warps a rank, warp w of rank r writing to the rank and channel dst(r, w,
// k) names for k = 0, 1, ... until it reports false, each rank expecting
// expect writes. It returns when each rank's last write became visible, or
// nil (and no error) when the step failed under the phase's faults.
func notifyWrites(cfg *LayerConfig, ph *Phase, g *gpuModel, perRank, expect, bytes int, dst func(r, w, k int) (rank, ch int, ok bool)) ([]sim.Time, transport.Resources, int64, error) {
	R := cfg.Routing.Shape.Ranks
	last := make([]sim.Time, R)
	left := make([]int, R)
	for r := range left {
		left[r] = expect
	}
	e, conn, err := openPhase(cfg, ph, func(_ *sim.Engine, d transport.Delivery) {
		last[d.Op.Dst] = max(last[d.Op.Dst], d.Times.Visible)
		left[d.Op.Dst]--
	}, nil, g.mem)
	if err != nil {
		return nil, transport.Resources{}, 0, err
	}
	sms := make([]hw.SM, R)
	warps := make([]transport.Warp, R*perRank)
	next := make([]int, len(warps))
	var id sim.HandlerID
	var msgs int64
	resume := func(e *sim.Engine, w *transport.Warp) { e.At(max(w.T.T, e.Now()), id, 0, int64(w.ID)) }
	id = e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, arg int64) {
		w := &warps[arg]
		to, ch, ok := dst(int(w.Rank), int(arg)%perRank, next[arg])
		if !ok {
			return
		}
		next[arg]++
		msgs++
		conn.Post(e, w, transport.Op{Src: int(w.Rank), Dst: to, Channel: ch, Bytes: bytes, Flush: true})
	}))
	for i := range warps {
		r := i / perRank
		sms[r].Lanes = perRank
		warps[i] = transport.Warp{Rank: int32(r), ID: int32(i), T: hw.NewThread(g.costsOf(r), &sms[r]), Resume: resume}
		e.At(0, id, 0, int64(i))
	}
	e.Run()
	if ph.notifyFailed(R) {
		return nil, conn.Resources(), msgs, nil
	}
	for r := range R {
		if left[r] != 0 {
			return nil, transport.Resources{}, 0, fmt.Errorf("transport %s: notify step lost %d messages to rank %d", cfg.Transport.Name(), left[r], r)
		}
	}
	return last, conn.Resources(), msgs, nil
}

// runNormalDispatch simulates normal dispatch on one node, launched after
// the notify step, and checks the payloads every rank received.
func runNormalDispatch(cfg *LayerConfig, n *NormalLayout, plan *normalPlan, g *gpuModel, probs *problemList, ph *Phase, notify []sim.Time) (transport.Resources, error) {
	p, err := runNormalPhase(cfg, n, plan, g, probs, ph, false, notify)
	if err != nil {
		return transport.Resources{}, err
	}
	if ph.Failure == nil && !cfg.NoPayload {
		checkPayloads(probs, cfg.Routing, n, p.sumGot, "normal dispatch")
	}
	return p.conn.Resources(), nil
}
