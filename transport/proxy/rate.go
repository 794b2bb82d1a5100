package proxy

import (
	"fmt"
	"slices"

	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// StreamConfig is a pipelined-issue experiment: GPU threads post writes
// back to back to one remote rank and wait for completion only at the end
// (the message-rate and goodput runs of §4.2).
type StreamConfig struct {
	Proxy          Config
	ThreadsPerRing int // producers per ring; the tuned handoff needs 1
	Bytes          int // payload per write
	Messages       int // total to post; 0 picks enough for a steady state
}

// Validate reports a configuration the model cannot run.
func (c StreamConfig) Validate() error {
	if err := c.Proxy.Validate(); err != nil {
		return err
	}
	switch {
	case c.ThreadsPerRing < 1:
		return fmt.Errorf("threads per ring must be at least 1 (got %d)", c.ThreadsPerRing)
	case c.ThreadsPerRing > hw.MaxThreads/c.Proxy.withDefaults().Rings:
		return fmt.Errorf("threads per ring: %d on %d rings is more than the %d threads the model takes", c.ThreadsPerRing, c.Proxy.withDefaults().Rings, hw.MaxThreads)
	case c.Proxy.Handoff == Tuned && c.ThreadsPerRing > 1:
		return fmt.Errorf("the tuned handoff has one producer per ring (got %d threads per ring)", c.ThreadsPerRing)
	case c.Bytes < 1:
		return fmt.Errorf("payload must be at least 1 B (got %d)", c.Bytes)
	case c.Messages < 0:
		return fmt.Errorf("messages must not be negative (got %d)", c.Messages)
	}
	return nil
}

type streamRun struct {
	m    *model
	left []int
	sent []sim.Time
}

// Stream runs a pipelined-issue experiment and returns the message rate
// the initiator's NIC carried in steady state, in M msg/s.
func Stream(p *profile.Profile, cfg StreamConfig) (float64, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	e := &sim.Engine{}
	s := &streamRun{m: newModel(e, p, cfg.Proxy, 2)}
	m := s.m
	rings := m.nodes[0].rings
	n := len(rings) * cfg.ThreadsPerRing
	total := cfg.Messages
	if total == 0 {
		total = max(8000, 64*n)
	}
	per := (total + n - 1) / n
	s.left = make([]int, n)
	s.sent = make([]sim.Time, 0, per*n)
	m.onDeliver = func(_ *sim.Engine, _ int32, msg hw.MsgTimes) { s.sent = append(s.sent, msg.Sent) }
	tuned := cfg.Proxy.Handoff == Tuned
	sms := make([]hw.SM, n)
	for i := range n {
		sms[i].Lanes = 1
		th0 := hw.NewThread(&m.c.gpu, &sms[i])
		th := &th0
		r := rings[i%len(rings)]
		s.left[i] = per
		idx := i
		var pr *producer
		pr = m.newProducer(th, func(e *sim.Engine, _ *producer) {
			s.left[idx]--
			if s.left[idx] > 0 {
				pr.post(e, r, m.newOp(0, 1, cfg.Bytes, false, 0), tuned)
			}
		})
		pr.post(e, r, m.newOp(0, 1, cfg.Bytes, false, 0), tuned)
	}
	e.Run()
	if len(s.sent) != per*n {
		return 0, fmt.Errorf("model lost messages: %d of %d delivered", len(s.sent), per*n)
	}
	slices.Sort(s.sent)
	// Steady state: skip the first fifth (rings and queues filling) and the
	// last tenth (producers running out unevenly).
	k, j := len(s.sent)/5, len(s.sent)-1-len(s.sent)/10
	span := s.sent[j] - s.sent[k]
	if span <= 0 {
		return 0, fmt.Errorf("model produced no measurable span")
	}
	return float64(j-k) / span.Us(), nil
}
