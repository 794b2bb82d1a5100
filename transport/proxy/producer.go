package proxy

import (
	"moebench/transport/hw"
	"moebench/transport/sim"
)

// Phases of a producer's enqueue. Every phase that touches a ring (the
// reservation, the progress read, the descriptor store) runs as an event
// at the producer's own local time.
const (
	phReserve int32 = iota
	phCheck         // the progress read returned
	phWrite         // space is there: store and publish the descriptor
	phDone          // the enqueue left the SM
)

// producer is one GPU thread (or a warp's leader lane) enqueuing
// descriptors.
type producer struct {
	m      *model
	id     sim.HandlerID
	th     *hw.Thread
	r      *ring
	op     int32
	slot   int64
	cached int64 // tuned: the ring progress last read
	tuned  bool  // this enqueue uses the tuned protocol
	// done runs at the thread's local time once the enqueue is issued.
	done func(e *sim.Engine, p *producer)
}

func (m *model) newProducer(th *hw.Thread, done func(*sim.Engine, *producer)) *producer {
	p := &producer{m: m, th: th, done: done}
	p.id = m.e.Register(p)
	return p
}

// post starts enqueuing op on r at the thread's local time.
func (p *producer) post(e *sim.Engine, r *ring, op int32, tuned bool) {
	p.r, p.op, p.tuned = r, op, tuned
	e.At(max(p.th.T, e.Now()), p.id, phReserve, 0)
}

// Handle advances the enqueue.
func (p *producer) Handle(e *sim.Engine, ph int32, _ int64) {
	m := p.m
	c := &m.c
	r := p.r
	p.th.T = max(p.th.T, e.Now())
	switch ph {
	case phReserve:
		m.ops[p.op].issueStart = p.th.T
		p.slot = r.tail
		r.tail++
		if p.tuned {
			// The slot index lives in a register; the cached progress
			// says whether the slot is free.
			p.th.Compute(c.gpu.Reserve)
			if p.slot < p.cached+int64(len(r.slots)) {
				p.write(e)
				return
			}
		} else {
			p.th.Compute(c.gpu.Atomic) // reserve the slot on a shared counter
			if m.cfg.Handoff == FIFO && p.slot < r.cachedProg+int64(len(r.slots)) {
				p.write(e)
				return
			}
		}
		p.th.T = m.hostRead(int(m.ops[p.op].src), p.th.T) // read the host-resident progress
		e.At(p.th.T, p.id, phCheck, 0)
	case phCheck:
		n := int64(len(r.slots))
		if prog := r.progress(p.th.T); p.slot < prog+n {
			p.cached = prog
			r.cachedProg = max(r.cachedProg, prog)
			p.write(e)
			return
		}
		if r.pubAt > p.th.T && p.slot < r.pubVal+n {
			// Progress already written, not yet seen: the next poll sees it.
			p.th.T = c.hostDetect(r.pubAt)
			p.cached = r.pubVal
			e.At(p.th.T, p.id, phWrite, 0)
			return
		}
		i := len(r.waiters)
		r.waiters = append(r.waiters, p)
		for i > 0 && r.waiters[i-1].slot > p.slot {
			r.waiters[i] = r.waiters[i-1]
			i--
		}
		r.waiters[i] = p
	case phWrite:
		p.write(e)
	case phDone:
		p.done(e, p)
	}
}

// write stores the descriptor and publishes it: the tuned handoff's one
// posted store carries its own validity; the baseline's system-scope
// release orders it before the publication.
func (p *producer) write(e *sim.Engine) {
	m := p.m
	c := &m.c
	r := p.r
	p.th.Compute(c.hostStore)
	fifo := m.cfg.Handoff == FIFO
	switch {
	case fifo:
		p.th.Fence(c.gpu.FenceSCGPU)
	case !p.tuned:
		p.th.Fence(c.gpu.ReleaseSys)
	}
	o := &m.ops[p.op]
	o.issueEnd = p.th.T
	o.visible = p.th.T + c.descFlight
	if !p.tuned && !fifo {
		o.visible += c.basePublish
	}
	d := r.slot(p.slot)
	d.op, d.written, d.visible = p.op, true, o.visible
	if p.slot == r.head {
		r.w.notify(e, r.wi, d.visible)
	}
	e.At(p.th.T, p.id, phDone, 0)
}
