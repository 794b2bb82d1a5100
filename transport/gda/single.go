package gda

import (
	"fmt"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// SingleConfig is the one-operation experiment of §4.1: one thread, at most
// one write outstanding, completion polled before the next issue.
type SingleConfig struct {
	Ordering Ordering
	Payload  int
	Inline   bool
	// QPs configured on the PE; a PE-wide quiet visits each of them.
	QPs int
	// Quiet selects completion by PE-wide quiet instead of polling the used
	// QP's CQ.
	Quiet bool
	// DC sends on a DCI to a DCT instead of an RC QP.
	DC bool
	// Shared: the QP is shared, so the slot is reserved with an atomic.
	Shared bool
	// LibCycles and LibNs are a library's software cost per post beyond
	// the mechanism (presets).
	LibCycles, LibNs float64
	Iters            int
}

// SingleResult holds the three single-operation figures of Table 3.
type SingleResult struct {
	Issue   sim.Time // the thread's submission time
	PutC    sim.Time // issue through completion-routine return
	RTT     sim.Time // request to observed remote reply
	CQEWait sim.Time // doorbell store to CQE observed
}

type singleRun struct {
	gpu hw.GPUCosts
	fab *hw.Fabric
	// last reported times, by message id
	cqe, vis map[int32]sim.Time
	e        *sim.Engine
	cfg      SingleConfig
	msg      hw.Msg // the message each post sends
	lay      Layout
}

func (s *singleRun) Delivered(e *sim.Engine, _ *hw.NIC, id int32, _ *hw.Msg) { s.vis[id] = e.Now() }
func (s *singleRun) Completed(e *sim.Engine, _ *hw.NIC, id int32, _ *hw.Msg) { s.cqe[id] = e.Now() }

// SingleOp runs the single-operation experiment and returns the steady-state
// figures (after the first iteration, which has no completion routine
// before it).
func SingleOp(p *profile.Profile, cfg SingleConfig) (SingleResult, error) {
	if cfg.Iters == 0 {
		cfg.Iters = 8
	}
	if cfg.QPs == 0 {
		cfg.QPs = 1
	}
	if err := CheckWrite(cfg.Payload, cfg.Inline); err != nil {
		return SingleResult{}, err
	}
	av := 0
	if cfg.DC {
		av = avBytes
	}
	lay := WriteLayout(cfg.Payload, cfg.Inline, av)
	e := &sim.Engine{}
	s := &singleRun{gpu: hw.NewGPUCosts(p), cqe: map[int32]sim.Time{}, vis: map[int32]sim.Time{}, e: e, cfg: cfg, lay: lay,
		msg: hw.Msg{Bytes: int32(cfg.Payload), BBs: int32(lay.BBs), Pointer: !cfg.Inline, DC: cfg.DC}}
	s.fab = hw.NewFabric(e, hw.NewNICParams(p), 2, cfg.QPs, s)
	s.fab.DoorbellLead(s.fab.P.MMIO)
	if cfg.DC {
		for _, n := range s.fab.NICs {
			n.DCI(0)
		}
	}
	sms := []hw.SM{{Lanes: 1}, {Lanes: 1}}
	a := hw.NewThread(&s.gpu, &sms[0])
	b := hw.NewThread(&s.gpu, &sms[1])
	var res SingleResult
	res.Issue, res.PutC, res.CQEWait = s.putWithCompletion(&a)
	rtt, err := s.roundTrip(&a, &b)
	res.RTT = rtt
	return res, err
}

// post has th write to dst through nic and ring the doorbell; it returns
// the message's id.
func (s *singleRun) post(th *hw.Thread, nic, dst int) int32 {
	c, cfg, e := &s.gpu, &s.cfg, s.e
	reserve := c.Reserve
	if cfg.Shared {
		reserve = c.Atomic
	}
	th.Compute(sim.Ns(cfg.LibCycles*1000/c.ClockMHz+cfg.LibNs) + reserve + sim.Time(s.lay.Loads)*c.L2Load)
	th.Store(s.lay.Segments, 1)
	m := s.msg
	m.Dst = int32(dst)
	id := s.fab.NICs[nic].Post(0, m)
	at := ring(th, cfg.Ordering)
	s.fab.NICs[nic].Doorbell(e, at, 0)
	e.RunUntil(at) // let the NIC see the doorbell in time order
	return id
}

// putWithCompletion is a put and its completion, Iters times; the last
// gives the figures: the issue, the put with its completion and the wait
// for the CQE.
func (s *singleRun) putWithCompletion(a *hw.Thread) (issue, putC, cqeWait sim.Time) {
	c, cfg := &s.gpu, &s.cfg
	for i := range cfg.Iters {
		start := a.T
		if i > 0 {
			a.Pending(c.CQUpdStores)
		}
		id := s.post(a, 0, 1)
		issued := a.T
		delete(s.cqe, id)
		s.e.Run()
		cqe := s.cqe[id]
		var done sim.Time
		if cfg.Quiet {
			// NVSHMEM's quiet walks every configured QP; the used one it
			// polls until its CQE arrives.
			done = max(pollDetect(c, cqe), issued+c.L2Load) + sim.Time(cfg.QPs)*c.QuietQP + c.CQPoll
		} else {
			done = pollDetect(c, cqe) + c.CQPoll
		}
		a.T = done
		if i == cfg.Iters-1 {
			issue, putC, cqeWait = issued-start, done-start, pollDetect(c, cqe)-issued
		}
	}
	return issue, putC, cqeWait
}

// until runs events until the message's time in m is reported. The
// round trip must not run past the responder's reply, which is posted at
// a time the responder chooses.
func (s *singleRun) until(id int32, m map[int32]sim.Time) (sim.Time, error) {
	for {
		if v, ok := m[id]; ok {
			return v, nil
		}
		if !s.e.Step() {
			return 0, fmt.Errorf("model lost message %d", id)
		}
	}
}

// roundTrip is Iters round trips, A writing to B, B polling the word and
// writing back, A polling; the last gives the time.
func (s *singleRun) roundTrip(a, b *hw.Thread) (rtt sim.Time, _ error) {
	c, e := &s.gpu, s.e
	for i := range s.cfg.Iters {
		e.Run()
		start := max(a.T, b.T, e.Now())
		a.T, b.T = start, start
		id := s.post(a, 0, 1)
		delete(s.vis, id)
		delete(s.cqe, id)
		visA, err := s.until(id, s.vis)
		if err != nil {
			return rtt, err
		}
		b.T = max(b.T, pollDetect(c, visA))
		idA := id
		id = s.post(b, 1, 0)
		delete(s.vis, id)
		delete(s.cqe, id)
		visB, err := s.until(id, s.vis)
		if err != nil {
			return rtt, err
		}
		a.T = pollDetect(c, visB)
		e.Run()
		cqeA, cqeB := s.cqe[idA], s.cqe[id]
		if i == s.cfg.Iters-1 {
			rtt = a.T - start
		}
		// Both sides drain their CQs before the next round trip.
		a.T = max(a.T, pollDetect(c, cqeA)) + c.CQPoll
		b.T = max(b.T, pollDetect(c, cqeB)) + c.CQPoll
	}
	return rtt, nil
}
