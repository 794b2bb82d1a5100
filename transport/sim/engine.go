package sim

import "fmt"

// Handler reacts to an event. Op and Arg are the handler's own: a handler
// that serves several kinds of event switches on op, and arg carries an
// index (a QP, a slot, a message) so that scheduling needs no closure.
type Handler interface {
	Handle(e *Engine, op int32, arg int64)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(e *Engine, op int32, arg int64)

// Handle calls f.
func (f HandlerFunc) Handle(e *Engine, op int32, arg int64) { f(e, op, arg) }

// item is 32 bytes: the handler is an index into Engine.handlers rather than
// an interface value, which keeps four children within two cache lines.
type item struct {
	at  Time
	seq uint64
	arg int64
	h   uint32
	op  int32
}

// before orders by time, then by schedule sequence. Written so that the
// compiler can evaluate it without branches: heap comparisons on event
// times are coin flips, and a mispredicted branch costs more than both
// halves.
func (a *item) before(b *item) bool {
	lt := a.at < b.at
	eq := a.at == b.at
	sl := a.seq < b.seq
	return lt != (eq && sl) // lt and eq exclude each other, so != is ||
}

// Engine runs events in (time, sequence) order. The zero value is ready to
// use. An Engine is not safe for concurrent use: models are single-threaded
// by design, and parallelism comes from running independent engines.
type Engine struct {
	q        []item
	handlers []Handler
	now      Time
	seq      uint64
	handled  uint64
	stopped  bool
	// hole is true while a handler runs and q[0] is the event being
	// handled: the first event the handler schedules replaces it with a
	// single sift-down, the common pop-then-push case at half the cost.
	hole bool
}

// Now is the current virtual time.
func (e *Engine) Now() Time { return e.now }

// Handled counts events run so far.
func (e *Engine) Handled() uint64 { return e.handled }

// Pending counts scheduled events not yet run.
func (e *Engine) Pending() int {
	if e.hole {
		return len(e.q) - 1
	}
	return len(e.q)
}

// HandlerID names a registered handler.
type HandlerID uint32

// Register makes h schedulable and returns its id. Models register each
// component once when they are built.
func (e *Engine) Register(h Handler) HandlerID {
	e.handlers = append(e.handlers, h)
	return HandlerID(len(e.handlers) - 1)
}

// At schedules h to run at time t. Scheduling in the past is a bug in the
// calling model, not a user error, so it panics like akita's engine does.
func (e *Engine) At(t Time, h HandlerID, op int32, arg int64) {
	if t < e.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now (%v)", t, e.now))
	}
	e.seq++
	if e.hole {
		e.hole = false
		e.q[0] = item{at: t, seq: e.seq, h: uint32(h), op: op, arg: arg}
		e.down(0)
		return
	}
	e.q = append(e.q, item{at: t, seq: e.seq, h: uint32(h), op: op, arg: arg})
	e.up(len(e.q) - 1)
}

// After schedules h to run d after now.
func (e *Engine) After(d Time, h HandlerID, op int32, arg int64) {
	e.At(e.now+d, h, op, arg)
}

// Stop makes Run return after the current event.
func (e *Engine) Stop() { e.stopped = true }

// Run executes events until none remain or Stop is called.
func (e *Engine) Run() { e.RunUntil(Never) }

// RunUntil executes events whose time is at most limit, then sets the clock
// to the later of now and the last event run. It returns whether events
// remain.
func (e *Engine) RunUntil(limit Time) bool {
	e.stopped = false
	for len(e.q) > 0 && !e.stopped {
		if e.q[0].at > limit {
			return true
		}
		it := e.q[0]
		e.now = it.at
		e.handled++
		e.hole = true
		e.handlers[it.h].Handle(e, it.op, it.arg)
		if e.hole {
			e.hole = false
			e.pop()
		}
	}
	return len(e.q) > 0
}

// Step runs the next event, if any, and reports whether it ran one.
func (e *Engine) Step() bool {
	if len(e.q) == 0 {
		return false
	}
	it := e.q[0]
	e.now = it.at
	e.handled++
	e.hole = true
	e.handlers[it.h].Handle(e, it.op, it.arg)
	if e.hole {
		e.hole = false
		e.pop()
	}
	return true
}

// Reset drops pending events and rewinds the clock, keeping the heap's
// storage and the registered handlers so that repeated runs do not allocate.
func (e *Engine) Reset() {
	e.hole = false
	clear(e.q)
	e.q = e.q[:0]
	e.now, e.seq, e.handled, e.stopped = 0, 0, 0, false
}

func (e *Engine) pop() {
	q := e.q
	n := len(q) - 1
	q[0] = q[n]
	e.q = q[:n]
	if n > 1 {
		e.down(0)
	}
}

// up and down keep a 4-ary min-heap: shallower than a binary heap, and a
// node's four children share a cache line or two.
func (e *Engine) up(i int) {
	q := e.q
	x := q[i]
	for i > 0 {
		p := (i - 1) / 4
		if !x.before(&q[p]) {
			break
		}
		q[i] = q[p]
		i = p
	}
	q[i] = x
}

func (e *Engine) down(i int) {
	q := e.q
	n := len(q)
	x := q[i]
	for {
		c := 4*i + 1
		if c+3 >= n {
			if c >= n {
				break
			}
			m := c
			for j := c + 1; j < n; j++ {
				if q[j].before(&q[m]) {
					m = j
				}
			}
			if q[m].before(&x) {
				q[i] = q[m]
				i = m
			}
			break
		}
		// Branch-free choice of the least of four children: heap
		// comparisons on event times are unpredictable, and a
		// mispredicted branch costs more than the arithmetic.
		a := c + b2i(q[c+1].before(&q[c]))
		b := c + 2 + b2i(q[c+3].before(&q[c+2]))
		m := a + b2i(q[b].before(&q[a]))*(b-a)
		if !q[m].before(&x) {
			break
		}
		q[i] = q[m]
		i = m
	}
	q[i] = x
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
