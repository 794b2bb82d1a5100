package proxy

import (
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
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
	idx    int64 // in model.prods: the event argument that finds it
	th     *hw.Thread
	w      *transport.Warp // the conn's warp being served (nil elsewhere)
	r      *ring
	op     int32
	slot   int64
	cached int64 // tuned: the ring progress last read
	tuned  bool  // this enqueue uses the tuned protocol
	// done runs at the thread's local time once the enqueue is issued.
	done func(e *sim.Engine, p *producer)
}

// newProducer makes a producer on thread th. Producers share one handler
// (model.prodID): a layer of thousands of ranks has one for every warp
// waiting on a full ring, more than an engine's handlers should be.
func (m *model) newProducer(th *hw.Thread, done func(*sim.Engine, *producer)) *producer {
	p := &producer{m: m, idx: int64(len(m.prods)), th: th, done: done}
	m.prods = append(m.prods, p)
	return p
}

// at schedules phase ph of p's enqueue at t.
func (p *producer) at(e *sim.Engine, t sim.Time, ph int32) { e.At(t, p.m.prodID, ph, p.idx) }

// post starts enqueuing op on r at the thread's local time.
func (p *producer) post(e *sim.Engine, r *ring, op int32, tuned bool) {
	p.r, p.op, p.tuned = r, op, tuned
	p.at(e, max(p.th.T, e.Now()), phReserve)
}

// handle advances the enqueue.
func (p *producer) handle(e *sim.Engine, ph int32) {
	m := p.m
	c := &m.c
	r := p.r
	p.th.T = max(p.th.T, e.Now())
	switch ph {
	case phReserve:
		m.op(p.op).issueStart = p.th.T
		p.slot = r.tail
		r.tail++
		if p.tuned {
			// The slot index lives in a register; the cached progress
			// says whether the slot is free.
			p.th.Compute(c.gpu.Reserve)
			if p.slot < p.cached+r.size {
				p.write(e)
				return
			}
		} else {
			p.th.Compute(c.gpu.Atomic) // reserve the slot on a shared counter
			if m.cfg.Handoff == FIFO && p.slot < r.cachedProg+r.size {
				p.write(e)
				return
			}
		}
		p.th.T = m.hostRead(int(m.op(p.op).src), p.th.T) // read the host-resident progress
		p.at(e, p.th.T, phCheck)
	case phCheck:
		n := r.size
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
			p.at(e, p.th.T, phWrite)
			return
		}
		r.wait(p, p.slot)
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
	o := m.op(p.op)
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
	p.at(e, p.th.T, phDone)
}
