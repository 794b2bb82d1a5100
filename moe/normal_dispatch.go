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
	last := make([]sim.Time, R)
	left := make([]int, R)
	for r := range left {
		left[r] = R - 1
	}
	e, conn, err := openPhaseOn(cfg, ph, func(_ *sim.Engine, d transport.Delivery) {
		last[d.Op.Dst] = max(last[d.Op.Dst], d.Times.Visible)
		left[d.Op.Dst]--
	}, nil, g.mem)
	if err != nil {
		return nil, transport.Resources{}, 0, err
	}
	bytes := 4 * (1 + s.LocalExperts()) // tokens for the rank + per expert
	sms := make([]hw.SM, R)
	warps := make([]transport.Warp, R*C)
	next := make([]int, R*C)
	var id sim.HandlerID
	var msgs int64
	resume := func(e *sim.Engine, w *transport.Warp) { e.At(max(w.T.T, e.Now()), id, 0, int64(w.ID)) }
	id = e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, arg int64) {
		w := &warps[arg]
		ch := int(arg) % C
		// Channel warp ch writes to peers ch+1, ch+1+C, ... after itself.
		off := 1 + ch + next[arg]*C
		if off >= R {
			return
		}
		next[arg]++
		msgs++
		conn.Post(e, w, transport.Op{Src: int(w.Rank), Dst: (int(w.Rank) + off) % R, Channel: ch, Bytes: bytes, Flush: true})
	}))
	for i := range warps {
		r := i / C
		sms[r].Lanes = C
		warps[i] = transport.Warp{Rank: int32(r), ID: int32(i), T: hw.NewThread(g.costsOf(r), &sms[r]), Resume: resume}
		e.At(0, id, 0, int64(i))
	}
	e.Run()
	if ph.notifyFailed(R) {
		return nil, conn.Resources(), msgs, nil
	}
	out := make([]sim.Time, R)
	hostSee := sim.Ns(cfg.Profile.Get("pcie.dma_write_ns"))
	for r := range R {
		if left[r] != 0 {
			return nil, transport.Resources{}, 0, fmt.Errorf("transport %s: notify step lost %d messages to rank %d", cfg.Transport.Name(), left[r], r)
		}
		out[r] = g.pollDetect(last[r]) + hostSee + hostLaunch
	}
	return out, conn.Resources(), msgs, nil
}
