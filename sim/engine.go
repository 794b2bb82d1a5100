package sim

import (
	"cmp"
	"fmt"
	"slices"
	"unsafe"

	"moebench/internal/hugepage"
)

// Handler reacts to an event. Op and Arg are the handler's own: a handler
// that serves several kinds of event switches on op, and arg carries an
// index (a QP, a slot, a message) so that scheduling needs no closure.
type Handler interface {
	Handle(e *Engine, op int32, arg int64)
}

// Prefetcher is a Handler that can name, ahead of an event, the memory the
// event will touch (see Prefetch).
type Prefetcher interface {
	// Prefetch asks for the cache lines that handling (op, arg) will
	// read. It is a hint, called twice for an event ahead in the
	// engine's order: far ahead (near false) for the lines the event's
	// argument names, then nearer for lines that those hold the address
	// of, which the far call's have loaded by then. It must change
	// nothing.
	Prefetch(op int32, arg int64, near bool)
}

// lookahead is how many events ahead the engine prefetches: enough that
// the lines arrive before their event runs, few enough that they are
// still cached when it does.
const lookahead = 4

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(e *Engine, op int32, arg int64)

// Handle calls f.
func (f HandlerFunc) Handle(e *Engine, op int32, arg int64) { f(e, op, arg) }

// item is 24 bytes: the schedule sequence, the handler (an index into
// Engine.handlers rather than an interface value) and the op share one
// word, sequence highest, so that comparing keys compares sequences. A
// million events in flight then cost 24 MB, and four heap children fit in
// two cache lines.
type item struct {
	at  Time
	arg int64
	key uint64 // seq<<keySeq | handler<<keyH | op
}

// Key layout: 32 bits of sequence, 24 of handler, 8 of op. When the
// sequence runs out (every 4 billion events), the pending events are
// numbered afresh in their order (renumber), so it never wraps.
const (
	keyH   = 8
	keySeq = 32
	// MaxHandlers is how many handlers an engine takes.
	MaxHandlers = 1 << (keySeq - keyH)
	maxSeq      = 1<<(64-keySeq) - 1
)

func (it *item) handler() uint32  { return uint32(it.key>>keyH) & (MaxHandlers - 1) }
func (it *item) operation() int32 { return int32(uint8(it.key)) }

// compareItems orders by time, then by schedule sequence, as before does,
// for sorts.
func compareItems(a, b *item) int {
	if c := cmp.Compare(a.at, b.at); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

// before orders by time, then by schedule sequence. Written so that the
// compiler can evaluate it without branches: heap comparisons on event
// times are coin flips, and a mispredicted branch costs more than both
// halves.
func (a *item) before(b *item) bool {
	lt := a.at < b.at
	eq := a.at == b.at
	sl := a.key < b.key
	return lt != (eq && sl) // lt and eq exclude each other, so != is ||
}

// Engine runs events in (time, sequence) order. The zero value is ready to
// use. An Engine is not safe for concurrent use: models are single-threaded
// by design, and parallelism comes from running independent engines.
type Engine struct {
	// q is the near heap: events of the current wheel slot and earlier.
	// Later events wait unsorted in wheel slots of SlotWidth each, and
	// events past the wheel's horizon in the far heap; a slot is moved
	// into q when the clock reaches it. With a million events in flight
	// the heap then holds only a slot's worth, which keeps sifts short
	// and in cache. Order is by (time, sequence) whichever way an event
	// came, so the wheel changes speed, never results.
	//
	// A slot is sorted where it lies, in its blocks, which then become the
	// run (see run.go); q is a heap only of the events scheduled into the
	// current slot after that: a slot where a million warps start at one
	// instant then pops in O(1) from sorted blocks instead of sifting
	// through a million-item heap, and is never copied.
	q []item
	runQueue
	tmp []item // scratch for sorting a short run
	// Each wheel slot is a chain of fixed-size blocks from a shared pool,
	// so filling a slot never copies what it already holds, and an empty
	// slot is 8 bytes.
	wheel     [wheelSlots]slotChain
	blocks    []*[blockLen]item
	blockN    []int32 // items used in each block
	blockNext []int32 // the next block of its slot's chain, plus one; 0 ends it
	freeBlk   []int32
	spareBlk  []*[blockLen]item // allocated, never used yet
	inWheel   int
	far       []item
	cur       int64 // absolute slot number of the near heap
	handlers  []Handler
	pf        []Prefetcher // per handler, nil where it is not one
	anyPF     bool         // some handler is one
	now       Time
	seq       uint64
	handled   uint64
	stopped   bool
	seqLimit  uint64 // tests' renumbering point; 0 = maxSeq
	// hole is true while a handler runs and q[0] is the event being
	// handled: the first event the handler schedules replaces it with a
	// single sift-down, the common pop-then-push case at half the cost.
	hole bool
}

// Now is the current virtual time.
func (e *Engine) Now() Time { return e.now }

// Handled counts events run so far.
func (e *Engine) Handled() uint64 { return e.handled }

// Wheel geometry: slots of 2^17 ps (131 ns), 32,768 of them (4.3 ms).
// The horizon is how far ahead a large layer schedules: in LL dispatch a
// receiving NIC takes a count from each of its (source, local expert)
// queues, as many as there are experts, and beyond its connection cache's
// reach misses on nearly each one. At 8,192 experts its pipeline backs up
// by about 1.3 ms, and each delivery is scheduled that far out. Behind a
// 1.07 ms horizon those waited in the far heap, 56 million of them at
// 8,192 ranks (1.3 GiB, plus the copies its growth leaves), each pop a
// sift through it. A slot is two block indices: the wheel takes 256 KiB.
const (
	slotShift  = 17
	wheelSlots = 1 << 15
)

const blockLen = 256

// slotChain is a wheel slot: its first and last blocks, plus one (0: the
// slot is empty), linked through Engine.blockNext.
type slotChain struct{ head, tail int32 }

// SlotWidth is the time one wheel slot covers.
const SlotWidth Time = 1 << slotShift

// Pending counts scheduled events not yet run.
func (e *Engine) Pending() int {
	n := len(e.q) + e.runPending() + e.inWheel + len(e.far)
	if e.hole {
		n--
	}
	return n
}

// HandlerID names a registered handler.
type HandlerID uint32

// Register makes h schedulable and returns its id. Models register each
// component once when they are built.
func (e *Engine) Register(h Handler) HandlerID {
	if len(e.handlers) == MaxHandlers {
		panic(fmt.Sprintf("sim: more than %d handlers registered", MaxHandlers))
	}
	e.handlers = append(e.handlers, h)
	pf, ok := h.(Prefetcher)
	e.pf = append(e.pf, pf)
	e.anyPF = e.anyPF || ok
	return HandlerID(len(e.handlers) - 1)
}

// At schedules h to run at time t. Scheduling in the past is a bug in the
// calling model, not a user error, so it panics like akita's engine does.
func (e *Engine) At(t Time, h HandlerID, op int32, arg int64) {
	if t < e.now {
		panic(fmt.Sprintf("sim: event scheduled at %v, before now (%v)", t, e.now))
	}
	if uint32(op) > 0xff {
		panic(fmt.Sprintf("sim: op %d out of [0, 255]", op))
	}
	if e.seq >= e.seqEnd() {
		e.renumber()
	}
	e.seq++
	it := item{at: t, arg: arg, key: e.seq<<keySeq | uint64(h)<<keyH | uint64(op)}
	slot := int64(t) >> slotShift
	switch {
	case slot <= e.cur:
		if e.hole {
			e.hole = false
			e.q[0] = it
			e.down(0)
			return
		}
		// No earlier than run's last event, it goes last in run: run stays
		// sorted (its sequence is the largest yet), and a cascade of
		// events each a little after the one before pops in O(1).
		if e.runAppend(it) {
			return
		}
		e.q = append(e.q, it)
		e.up(len(e.q) - 1)
	case slot < e.cur+wheelSlots:
		w := &e.wheel[slot&(wheelSlots-1)]
		if w.tail == 0 || e.blockN[w.tail-1] == blockLen {
			nb := e.newBlock() + 1
			if w.tail == 0 {
				w.head = nb
			} else {
				e.blockNext[w.tail-1] = nb
			}
			w.tail = nb
		}
		b := w.tail - 1
		*e.item(b, e.blockN[b]) = it
		e.blockN[b]++
		e.inWheel++
	default:
		if len(e.far) == cap(e.far) {
			e.far = grow(e.far, 1)
		}
		e.far = append(e.far, it)
		heapUp(e.far, len(e.far)-1)
	}
}

func (e *Engine) seqEnd() uint64 {
	if e.seqLimit > 0 {
		return e.seqLimit
	}
	return maxSeq
}

// renumber gives the pending events fresh sequences 1..n in their (time,
// sequence) order, and the next event n+1: relative order, the only use
// of a sequence, is kept everywhere, since every structure holding events
// orders them by (time, key) or, within a wheel slot, by insertion, which
// the new numbers follow too.
func (e *Engine) renumber() {
	var all []*item
	for i := range e.q {
		all = append(all, &e.q[i])
	}
	e.runEach(func(it *item) { all = append(all, it) })
	for i := range e.wheel {
		for b := e.wheel[i].head; b != 0; b = e.blockNext[b-1] {
			for j := range e.blockN[b-1] {
				all = append(all, &e.blocks[b-1][j])
			}
		}
	}
	for i := range e.far {
		all = append(all, &e.far[i])
	}
	slices.SortFunc(all, compareItems)
	if uint64(len(all)) >= maxSeq {
		panic(fmt.Sprintf("sim: %d events pending, more than an engine numbers", len(all)))
	}
	const low = 1<<keySeq - 1
	for i, it := range all {
		it.key = uint64(i+1)<<keySeq | it.key&low
	}
	e.seq = uint64(len(all))
}

// item is item n of block b, n below blockLen. Indexing the block through
// its array pointer would first load the block's first line to check the
// pointer for nil: a cache miss of its own when the item lies further in,
// as an append to a wheel slot's block usually does, in a block no event
// has touched for a while. The address arithmetic leaves only the access
// itself, which faults on nil as the check would.
func (e *Engine) item(b, n int32) *item {
	return (*item)(unsafe.Add(unsafe.Pointer(e.blocks[b]), uintptr(n)*unsafe.Sizeof(item{})))
}

// newBlock takes a block from the pool, growing it when empty.
func (e *Engine) newBlock() int32 {
	if k := len(e.freeBlk); k > 0 {
		b := e.freeBlk[k-1]
		e.freeBlk = e.freeBlk[:k-1]
		e.blockNext[b] = 0
		return b
	}
	if len(e.spareBlk) == 0 {
		// Past the first few, blocks come a batch at a time, on huge
		// pages while they are filled.
		n := 1
		if len(e.blocks) >= blockSingles {
			n = blockSingles
			if inUse := len(e.blocks) - len(e.freeBlk); 4*e.inWheel >= inUse*blockLen {
				n = blockBatch
			}
		}
		b := hugepage.Make[[blockLen]item](n)
		for i := range b {
			e.spareBlk = append(e.spareBlk, &b[i])
		}
	}
	e.blocks = append(e.blocks, e.spareBlk[len(e.spareBlk)-1])
	e.spareBlk = e.spareBlk[:len(e.spareBlk)-1]
	e.blockN = append(e.blockN, 0)
	e.blockNext = append(e.blockNext, 0)
	return int32(len(e.blocks) - 1)
}

// blockSingles blocks are taken one at a time, so that a small simulation
// stays small, then as many at once (3 MiB, on the kernel's usual 4 KiB
// pages) while the blocks in use are less than a quarter full, else
// blockBatch at once (12 MiB), advised for huge pages (from
// hugepage.Threshold; only a batch's 2 MiB-aligned interior can have them,
// at 12 MiB at least five sixths of it). A block holds the events of one
// wheel slot. Where most slots hold a few, which touch one page of a
// block's six, huge pages make every block resident whole: with them from
// the 513th block on, 16 ranks × 256 experts × 511 tokens peaked at 92-94
// MiB against 79-81, and 64 ranks through mini-proxy at 299-304 against
// 240-245. Where slots are full, as in a large layer, 4 KiB pages cost a
// third of the run's page faults.
const (
	blockSingles = 512
	blockBatch   = 2048
)

// grow is slices.Grow for the far heap: a large one is advised into huge
// pages.
func grow(s []item, n int) []item {
	if len(s)+n <= cap(s) {
		return s
	}
	if (len(s)+n)*int(unsafe.Sizeof(item{})) < hugepage.Threshold {
		return slices.Grow(s, n)
	}
	// Large: a quarter more each time, so that a huge heap does not
	// leave up to half its array idle.
	t := hugepage.Make[item](max(cap(s)+cap(s)/4, len(s)+n))[:len(s)]
	copy(t, s)
	return t
}

// advance makes the next occupied wheel slot, with the far heap's events
// that fall in it, the run, sorted, once run and the near heap are both
// empty, and reports whether any event remains.
func (e *Engine) advance() bool {
	for len(e.q) == 0 && e.ri >= e.rn {
		e.dropRun()
		if e.inWheel == 0 {
			if len(e.far) == 0 {
				return false
			}
			// Jump straight to the far heap's first slot.
			e.cur = int64(e.far[0].at)>>slotShift - 1
		}
		e.cur++
		w := &e.wheel[e.cur&(wheelSlots-1)]
		// Far events that the wheel now covers come first: they were
		// scheduled before any of the slot's wheel events, so run is in
		// schedule order and a stable sort by time orders it fully.
		n := 0
		for len(e.far) > 0 && int64(e.far[0].at)>>slotShift <= e.cur {
			e.runPush(e.far[0])
			e.far = heapPop(e.far)
			n++
		}
		for b := w.head; b != 0; b = e.blockNext[b-1] {
			n += int(e.blockN[b-1])
			e.inWheel -= int(e.blockN[b-1])
			e.runB = append(e.runB, b-1)
		}
		*w = slotChain{}
		if n > 0 {
			e.sortRun(n)
		}
		e.runHead(0)
	}
	return true
}

// top is the next event: run's head or the near heap's, whichever is
// first. The caller has made sure one exists.
func (e *Engine) top() (it *item, fromRun bool) {
	if e.ri < e.rn {
		if r := &e.rb[e.ri]; len(e.q) == 0 || r.before(&e.q[0]) {
			return r, true
		}
	}
	return &e.q[0], false
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
	for !e.stopped && (len(e.q) > 0 || e.ri < e.rn || e.advance()) {
		if it, _ := e.top(); it.at > limit {
			return true
		}
		e.runTop()
	}
	return e.Pending() > 0
}

// runTop runs the next event. One from the near heap's top may be replaced
// by the handler's first scheduled event (see hole).
func (e *Engine) runTop() {
	if p, fromRun := e.top(); fromRun {
		it := *p
		// The run's events lookahead and twice that ahead, named to their
		// handlers (written out here: a call would cost every event).
		if e.anyPF {
			if j := e.ri + 2*lookahead; j < e.rn {
				if n := &e.rb[j]; e.pf[n.handler()] != nil {
					e.pf[n.handler()].Prefetch(n.operation(), n.arg, false)
				}
			}
			if j := e.ri + lookahead; j < e.rn {
				if n := &e.rb[j]; e.pf[n.handler()] != nil {
					e.pf[n.handler()].Prefetch(n.operation(), n.arg, true)
				}
			}
		}
		if e.ri++; e.ri == e.rn {
			e.runNext()
		}
		e.now = it.at
		e.handled++
		e.handlers[it.handler()].Handle(e, it.operation(), it.arg)
		return
	}
	it := e.q[0]
	e.now = it.at
	e.handled++
	e.hole = true
	e.handlers[it.handler()].Handle(e, it.operation(), it.arg)
	if e.hole {
		e.hole = false
		e.pop()
	}
}

// Step runs the next event, if any, and reports whether it ran one.
func (e *Engine) Step() bool {
	if !e.advance() {
		return false
	}
	e.runTop()
	return true
}

// Reset drops pending events and rewinds the clock, keeping the heap's
// storage and the registered handlers so that repeated runs do not allocate.
func (e *Engine) Reset() {
	e.hole = false
	clear(e.q)
	e.q = e.q[:0]
	e.dropRun()
	for i := range e.wheel {
		for b := e.wheel[i].head; b != 0; b = e.blockNext[b-1] {
			e.blockN[b-1] = 0
			e.freeBlk = append(e.freeBlk, b-1)
		}
		e.wheel[i] = slotChain{}
	}
	e.inWheel, e.cur = 0, 0
	clear(e.far)
	e.far = e.far[:0]
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
func (e *Engine) up(i int) { heapUp(e.q, i) }

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

// heapUp sifts q[i] up; heapPop removes the top. The far heap uses both,
// the near heap heapUp.
func heapUp(q []item, i int) {
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

func heapPop(q []item) []item {
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < min(c+4, n); j++ {
			if q[j].before(&q[m]) {
				m = j
			}
		}
		if !q[m].before(&q[i]) {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	return q
}
