package proxy

import (
	"fmt"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// SingleResult holds the single-operation figures of Table 3.
type SingleResult struct {
	Issue sim.Time // the GPU thread's enqueue
	PutC  sim.Time // enqueue through the GPU observing the completion counter
	RTT   sim.Time // request to the observed remote reply (a polled data word)
	// Handoff is the descriptor leaving the SM until the worker picked it
	// up; Wire is the worker's pick-up until the payload was visible.
	Handoff, Wire sim.Time
}

// singleRun drives one GPU thread per rank: put+completion first, then
// ping-pong round trips, one operation outstanding at a time.
type singleRun struct {
	m      *model
	a, b   hw.Thread
	pa, pb *producer
	iters  int
	i      int
	rtt    bool
	start  sim.Time
	res    SingleResult
}

// SingleOp runs the single-operation experiment of §4.1 for cfg (one 8 B
// write between two ranks) and returns the steady-state figures (the
// last of iters iterations; the model is deterministic).
func SingleOp(p *profile.Profile, cfg Config, iters int) (SingleResult, error) {
	if err := cfg.Validate(); err != nil {
		return SingleResult{}, err
	}
	if iters < 2 {
		iters = 2
	}
	e := &sim.Engine{}
	s := &singleRun{iters: iters}
	s.m = newModel(e, p, cfg, 2)
	c := &s.m.c
	sms := []hw.SM{{Lanes: 1}, {Lanes: 1}}
	s.a = hw.NewThread(&c.gpu, &sms[0])
	s.b = hw.NewThread(&c.gpu, &sms[1])
	s.pa = s.m.newProducer(&s.a, func(*sim.Engine, *producer) {})
	s.pb = s.m.newProducer(&s.b, func(*sim.Engine, *producer) {})
	s.m.onComplete = s.completed
	s.m.onDeliver = s.delivered
	s.next(e)
	e.Run()
	if s.i != 2*iters {
		return SingleResult{}, fmt.Errorf("model stalled after %d of %d operations", s.i, 2*iters)
	}
	return s.res, nil
}

func (s *singleRun) tuned() bool { return s.m.cfg.Handoff == Tuned }

// next starts the next operation from thread a.
func (s *singleRun) next(e *sim.Engine) {
	if s.i == s.iters {
		s.rtt = true
		s.a.T = max(s.a.T, s.b.T)
		s.b.T = s.a.T
	}
	if s.i == 2*s.iters {
		return
	}
	s.start = s.a.T
	op := s.m.newOp(0, 1, 8, false, 0)
	s.pa.post(e, s.m.nodes[0].rings[0], op, s.tuned())
}

func (s *singleRun) completed(e *sim.Engine, op int32) {
	if s.rtt || s.m.op(op).src != 0 {
		return
	}
	o := s.m.op(op)
	c := &s.m.c
	var seen sim.Time
	if s.m.cfg.Completion == CompletionHost {
		seen = c.hostDetect(o.counter)
	} else {
		seen = c.l2Detect(o.counter)
	}
	s.a.T = max(s.a.T, seen)
	s.res.Issue = o.issueEnd - o.issueStart
	s.res.PutC = s.a.T - s.start
	s.res.Handoff = o.picked - o.issueEnd
	s.i++
	s.next(e)
}

func (s *singleRun) delivered(e *sim.Engine, op int32, msg hw.MsgTimes) {
	if !s.rtt {
		return
	}
	o := s.m.op(op)
	c := &s.m.c
	if o.src == 0 {
		// The responder sees the word and answers.
		s.res.Wire = msg.Visible - o.picked
		s.b.T = max(s.b.T, c.l2Detect(msg.Visible))
		reply := s.m.newOp(1, 0, 8, false, 0)
		s.pb.post(e, s.m.nodes[1].rings[0], reply, s.tuned())
		return
	}
	s.a.T = max(s.a.T, c.l2Detect(msg.Visible))
	s.res.RTT = s.a.T - s.start
	s.i++
	s.next(e)
}
