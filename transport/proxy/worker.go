package proxy

import (
	"unsafe"

	"moebench/hw"
	"moebench/internal/prefetch"
	"moebench/sim"
)

type cqe struct {
	at sim.Time
	q  int32 // the worker's send queue (class × ranks + destination)
}

// sendQueue is a worker's QP to one destination (one per ring class): the
// ops posted and not yet reaped, oldest first, linked through their
// records; each chain's signaled last op ends what one CQE reaps. A
// worker keeps one per destination, millions in a large layer, so it is
// three int32s and no slices.
type sendQueue struct {
	head, tail int32 // op records, -1 none
	n          int32
}

func newSendQueues(n int) []sendQueue {
	qs := make([]sendQueue, n)
	for i := range qs {
		qs[i] = sendQueue{head: -1, tail: -1}
	}
	return qs
}

// push appends op to the queue.
func (q *sendQueue) push(m *model, op int32) {
	if q.tail < 0 {
		q.head = op
	} else {
		m.op(q.tail).next = op
	}
	q.tail = op
	q.n++
}

// pop removes the oldest op and reports whether it ended its chain. The
// record is read before the caller may free it.
func (q *sendQueue) pop(m *model) (op int32, last bool) {
	op = q.head
	o := m.op(op)
	q.head, last = o.next, o.last
	if q.head < 0 {
		q.tail = -1
	}
	q.n--
	return op, last
}

// worker is one CPU proxy thread. Its loop visits its rings round-robin
// and polls its CQ after each pass; between events its state is the local
// time T and the next slot of the loop, pos (len(rings) is the CQ).
type worker struct {
	m       *model
	nd      *node
	idx     int
	id      sim.HandlerID
	rings   []*ring
	pos     int
	T       sim.Time
	wakeAt  sim.Time
	wakePos int
	gen     int64
	cq      fifo[cqe]
	// qps are its send queues, class × ranks + destination, made when it
	// first posts: with one expert a rank, every op of a rank goes through
	// its first ring and so its first worker.
	qps []sendQueue
	nq  int
	// Posts counts ibv_post_send calls; WRs the work requests posted.
	Posts, WRs int64
}

// Prefetch asks for the worker, then for the ring or CQ it wakes at.
func (w *worker) Prefetch(_ int32, _ int64, near bool) {
	if !near {
		prefetch.Line(unsafe.Pointer(w))
		return
	}
	if w.wakePos < len(w.rings) {
		prefetch.Line(unsafe.Pointer(w.rings[w.wakePos]))
	} else if w.cq.len() > 0 {
		prefetch.Line(unsafe.Pointer(&w.cq.q[w.cq.head]))
	}
}

// Handle runs a wake-up: the loop reached a slot where something is
// visible.
func (w *worker) Handle(e *sim.Engine, _ int32, gen int64) {
	if gen != w.gen {
		return // superseded by an earlier wake-up
	}
	w.T, w.pos, w.wakeAt = e.Now(), w.wakePos, sim.Never
	w.step(e)
	w.schedule(e)
}

func (w *worker) step(e *sim.Engine) {
	c := &w.m.c
	if w.pos < len(w.rings) {
		r := w.rings[w.pos]
		if r.headVisible(w.T) {
			w.visit(e, r)
		} else {
			w.T += c.ringPoll
		}
		w.pos++
		return
	}
	if !w.reap(e) {
		w.T += c.cqEmpty
	}
	w.pos = 0
}

// visit consumes up to B visible descriptors for one destination from r,
// chains them into one post and rings the doorbell. When the
// destination's send queue is full it reaps the CQEs already there (the
// NIC's progress, which the native worker reads as the queue's consumer
// index) and, still full, leaves the descriptors for a later pass, as a
// real proxy does: waiting there would hold every other ring it serves.
func (w *worker) visit(e *sim.Engine, r *ring) {
	m := w.m
	c := &m.c
	cfg := &m.cfg
	w.T += c.ringPoll // the load that found the head descriptor
	dst := m.op(r.slot(r.head).op).dst
	qi := r.cls*m.ranks + int(dst)
	if w.qps == nil {
		w.qps = newSendQueues(w.nq)
	}
	q := &w.qps[qi]
	free := cfg.SQDepth - int(q.n)
	if free <= 0 && w.cq.len() > 0 && w.cq.peek().at <= w.T {
		w.reap(e)
		free = cfg.SQDepth - int(q.n)
	}
	if free <= 0 {
		return
	}
	first := r.head
	k := 0
	for s := r.head; s < r.tail && k < cfg.Batch && k < free; s++ {
		d := r.slot(s)
		if !d.written || d.visible > w.T || m.op(d.op).dst != dst {
			break
		}
		w.T += c.descConsume
		m.op(d.op).picked = w.T
		k++
	}
	r.head += int64(k)
	w.T += c.postChain + sim.Time(k)*c.postWR
	qp := w.idx*w.nq + qi
	for s := first; s < first+int64(k); s++ {
		d := r.slot(s)
		o := m.op(d.op)
		tag := int64(d.op)
		if s == first+int64(k)-1 {
			tag |= signaled
			o.last = true
		}
		b := o.wire()
		w.nd.nic.Post(qp, hw.Msg{Dst: dst, Bytes: b, BBs: 1, Pointer: b > inlineMax, Atomic: o.atomic, Tag: tag})
		q.push(m, d.op)
		d.written = false
	}
	w.nd.nic.Ring(e, w.T, qp, c.hostMMIO)
	w.Posts++
	w.WRs += int64(k)
	// Publish progress for the producers' reads.
	r.prevVal, r.pubVal, r.pubAt = r.pubVal, r.head, w.T
	if r.waiters.len() > 0 {
		e.At(w.T, m.pubID, 0, int64(r.gid))
	}
}

// full reports whether the send queue that r's head descriptor goes to
// has no room: the ring waits for a CQE, not for its descriptors.
func (w *worker) full(r *ring) bool {
	if w.qps == nil {
		return false
	}
	m := w.m
	dst := m.op(r.slot(r.head).op).dst
	return m.cfg.SQDepth-int(w.qps[r.cls*m.ranks+int(dst)].n) <= 0
}

// reap consumes every CQE that is in host memory by T and updates the
// completion counter. It reports whether it found one.
func (w *worker) reap(e *sim.Engine) bool {
	m := w.m
	c := &m.c
	found := false
	for w.cq.len() > 0 && w.cq.peek().at <= w.T {
		x := w.cq.pop()
		found = true
		w.T += c.cqPoll
		q := &w.qps[x.q]
		var seen sim.Time
		if m.cfg.Completion == CompletionHost {
			w.T += c.counterHost
			seen = w.T
		} else {
			w.T += c.counterGDR
			seen = w.T + c.gdrFlight
		}
		for last := false; !last; {
			var op int32
			op, last = q.pop(m)
			m.op(op).counter = seen
			if m.onComplete != nil {
				m.onComplete(e, op)
			}
			m.release(op)
		}
	}
	return found
}

// schedule finds the first slot of the loop, from (T, pos), at which
// something known is visible, and sleeps until then.
func (w *worker) schedule(e *sim.Engine) {
	for j, r := range w.rings {
		if r.head >= r.tail {
			continue // empty: its slot is not looked at
		}
		if d := r.slot(r.head); d.written {
			if !w.full(r) {
				w.notify(e, j, d.visible)
			} else if w.cq.len() > 0 {
				w.notify(e, j, w.cq.peek().at) // the next CQE may make room
			}
		}
	}
	if w.cq.len() > 0 {
		w.notify(e, len(w.rings), w.cq.peek().at)
	}
}

// notify tells the worker that something becomes visible at v in loop
// slot i (a ring's head descriptor, or the CQ at len(rings)).
func (w *worker) notify(e *sim.Engine, i int, v sim.Time) {
	if t := w.slotTime(i, v); t < w.wakeAt {
		w.wake(e, t, i)
	}
}

// cqeArrived tells the worker that a CQE reached its empty CQ at v: the
// CQ's slot, and every ring waiting for room, may act on it.
func (w *worker) cqeArrived(e *sim.Engine, v sim.Time) {
	for j, r := range w.rings {
		if r.head < r.tail && r.slot(r.head).written && w.full(r) {
			w.notify(e, j, v)
		}
	}
	w.notify(e, len(w.rings), v)
}

// slotTime is the start of the first visit of loop slot i at or after v,
// the loop being at slot pos at time T and every slot in between an empty
// poll: ringPoll per ring, cqEmpty for the CQ.
func (w *worker) slotTime(i int, v sim.Time) sim.Time {
	c := &w.m.c
	n := len(w.rings)
	period := sim.Time(n)*c.ringPoll + c.cqEmpty
	target := max(v, w.T, w.m.e.Now())
	if period <= 0 {
		return target
	}
	base := w.T - sim.Time(w.pos)*c.ringPoll // start of the current pass
	at := base + sim.Time(i)*c.ringPoll
	if at < target {
		at += (target - at + period - 1) / period * period
	}
	return at
}

func (w *worker) wake(e *sim.Engine, t sim.Time, pos int) {
	w.gen++
	w.wakeAt, w.wakePos = t, pos
	e.At(t, w.id, 0, w.gen)
}
