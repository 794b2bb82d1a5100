package proxy

import (
	"unsafe"

	"moebench/hw"
	"moebench/internal/prefetch"
	"moebench/profile"
	"moebench/sim"
)

// inlineMax is the largest payload a worker inlines: it fits one 64 B WQE
// beside the control and remote-address segments (Fig. 2).
const inlineMax = 28

// opRec is one operation on its way through the proxy. A layer of a
// thousand ranks has millions in flight at once, so the record carries
// the driver's op itself (channel, flush, tag) rather than a second copy
// beside it, and links its send queue (next, last) instead of the queue
// keeping slices of its own.
type opRec struct {
	src, dst int32
	bytes    int32 // the op's; an atomic moves 8 on the wire whatever it says
	ch       int32 // the driver's channel
	next     int32 // the next op of its send queue, -1 none
	atomic   bool
	flush    bool
	last     bool // the signaled end of its chain: one CQE reaps up to here
	// refs counts the delivery and completion still to come; its top bit
	// is the op's NIC, kept only to be reported back on delivery, which
	// keeps the record at 72 bytes.
	refs uint8
	// Times: the producer's issue, the descriptor's visibility to the
	// worker, the worker's pick-up, the completion counter's write as the
	// GPU can first see it.
	issueStart, issueEnd, visible, picked, counter sim.Time
	user                                           int64 // the driver's own (the conn's: the op's tag)
}

// wire is the payload the NIC moves.
func (o *opRec) wire() int32 {
	if o.atomic {
		return 8
	}
	return o.bytes
}

// desc is one 16 B descriptor slot of a ring.
type desc struct {
	op      int32
	written bool
	visible sim.Time
}

// ringPage is how many descriptor slots a ring allocates at once: a
// ring's slots are made as they are first used, since a layer of a
// thousand ranks keeps tens of thousands of rings that each see a few
// dozen descriptors.
const ringPage = 64

// ring is one descriptor ring in host memory.
type ring struct {
	gid   int // index in model.rings
	wi    int // index in its worker's rings
	w     *worker
	size  int64             // depth in descriptors
	mask  int64             // size-1 when size is a power of two, else -1
	pages []*[ringPage]desc // nil until used
	cls   int               // 1 for a background ring: its worker posts on QPs of their own
	head  int64             // consumed by the worker
	tail  int64             // reserved by producers
	// Consumer progress as producers read it: pubVal from pubAt on,
	// prevVal before. The worker publishes after each post.
	prevVal, pubVal int64
	pubAt           sim.Time
	waiters         fifo[waiter] // blocked on space, by slot
	ownerWarp       any          // Conn, tuned handoff: the ring's one producer
	cachedProg      int64        // fifo handoff: the progress producers last read
}

// waiter is a producer blocked on ring space, with the slot it holds
// beside it: a publication scans the waiters' slots without touching
// each producer.
type waiter struct {
	slot int64
	p    *producer
}

func newRing(gid int, w *worker, size int) *ring {
	r := &ring{gid: gid, w: w, size: int64(size), mask: -1, pages: make([]*[ringPage]desc, (size+ringPage-1)/ringPage)}
	if size&(size-1) == 0 {
		r.mask = int64(size - 1)
	}
	return r
}

// wait queues p, which holds slot, among the waiters in slot order.
func (r *ring) wait(p *producer, slot int64) {
	f := &r.waiters
	f.push(waiter{slot, p})
	i := len(f.q) - 1
	for i > f.head && f.q[i-1].slot > slot {
		f.q[i] = f.q[i-1]
		i--
	}
	f.q[i] = waiter{slot, p}
}

// slot is the descriptor of ring index s. Pointers stay valid: a page
// never moves.
func (r *ring) slot(s int64) *desc {
	var i int64
	if r.mask >= 0 {
		i = s & r.mask // s is never negative
	} else {
		i = s % r.size
	}
	p := r.pages[i/ringPage]
	if p == nil {
		p = new([ringPage]desc)
		r.pages[i/ringPage] = p
	}
	return &p[i%ringPage]
}

// headVisible reports whether the ring's next descriptor is written and
// visible at t; an empty ring's slot is not looked at.
func (r *ring) headVisible(t sim.Time) bool {
	if r.head >= r.tail {
		return false
	}
	d := r.slot(r.head)
	return d.written && d.visible <= t
}

// progress is the consumer index a read issued at t returns.
func (r *ring) progress(t sim.Time) int64 {
	if t >= r.pubAt {
		return r.pubVal
	}
	return r.prevVal
}

// fifo is a queue on a slice, compacted as it drains.
type fifo[T any] struct {
	q    []T
	head int
}

func (f *fifo[T]) push(v T) { f.q = append(f.q, v) }
func (f *fifo[T]) len() int { return len(f.q) - f.head }
func (f *fifo[T]) peek() T  { return f.q[f.head] }
func (f *fifo[T]) pop() T {
	v := f.q[f.head]
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	} else if f.head >= 256 && f.head*2 >= len(f.q) {
		n := copy(f.q, f.q[f.head:])
		f.q, f.head = f.q[:n], 0
	}
	return v
}

type node struct {
	idx     int
	nic     *hw.NIC
	rings   []*ring
	workers []*worker
}

// model is one run: ranks, each with its NIC, rings and workers.
type model struct {
	e     *sim.Engine
	cfg   Config
	c     costs
	fab   *hw.Fabric
	ranks int
	nodes []*node
	rings []*ring
	ops   sim.Slab[opRec]
	pubID sim.HandlerID
	// prods are every producer made; prodID runs their phases.
	prods  []*producer
	prodID sim.HandlerID
	// readAt is when each GPU's PCIe read rate next has room (a rank per
	// GPU unless perGPU > 1: the native engine's virtual ranks).
	readAt []sim.Time
	perGPU int
	// Hooks of the driver: the payload became visible at the destination
	// (called at that time), the completion counter covering the op was
	// written (called at the worker's event; op.counter says when the GPU
	// can first see it).
	onDeliver  func(e *sim.Engine, op int32, t hw.MsgTimes)
	onComplete func(e *sim.Engine, op int32)
}

func newModel(e *sim.Engine, p *profile.Profile, cfg Config, ranks int) *model {
	cfg = cfg.withDefaults()
	m := &model{e: e, cfg: cfg, c: newCosts(p, cfg.State), ranks: ranks, readAt: make([]sim.Time, ranks), perGPU: 1}
	m.fab = hw.NewFabric(e, nicParams(p), ranks, cfg.qpsPerNIC(ranks), m)
	m.fab.DoorbellLead(m.c.hostMMIO) // workers ring from their own clock, never behind the engine's
	m.pubID = e.Register(publisher{m})
	m.prodID = e.Register(producers{m})
	for i := range ranks {
		nd := &node{idx: i, nic: m.fab.NICs[i]}
		nd.nic.HostQueues(m.c.hostFetch)
		for w := range cfg.Workers {
			wk := &worker{m: m, nd: nd, idx: w, wakeAt: sim.Never, nq: cfg.classes() * ranks}
			wk.id = e.Register(wk)
			nd.workers = append(nd.workers, wk)
		}
		for r := range cfg.Rings {
			rg := newRing(len(m.rings), nd.workers[r%cfg.Workers], cfg.RingSlots)
			if cfg.BackgroundRings > 0 && r >= cfg.Rings-cfg.BackgroundRings {
				rg.cls = 1
			}
			rg.wi = len(rg.w.rings)
			rg.w.rings = append(rg.w.rings, rg)
			nd.rings = append(nd.rings, rg)
			m.rings = append(m.rings, rg)
		}
		m.nodes = append(m.nodes, nd)
	}
	return m
}

// newOp records an op; the last one freed is reused first.
func (m *model) newOp(src, dst, bytes int, atomic bool, user int64) int32 {
	id := m.ops.Alloc()
	*m.ops.At(id) = opRec{src: int32(src), dst: int32(dst), bytes: int32(bytes), next: -1, atomic: atomic, refs: 2, user: user}
	return id
}

// opNIC is opRec.refs' bit for the op's NIC.
const opNIC = 1 << 7

// nic is the op's NIC.
func (o *opRec) nic() bool { return o.refs&opNIC != 0 }

// op is op record id.
func (m *model) op(id int32) *opRec { return m.ops.At(id) }

func (m *model) release(id int32) {
	o := m.ops.At(id)
	o.refs--
	if o.refs&^opNIC == 0 {
		m.ops.Free(id)
	}
}

// Tags of the NIC messages: the op index, and whether the WQE is the
// signaled last one of its chain.
const signaled = int64(1) << 40

// Delivered runs at the destination when the payload is visible.
func (m *model) Delivered(e *sim.Engine, nic *hw.NIC, id int32, msg *hw.Msg) {
	op := int32(msg.Tag &^ signaled)
	if m.onDeliver != nil {
		m.onDeliver(e, op, nic.Times(id))
	}
	m.release(op)
}

// Completed runs at the requester when the CQE is in host memory. Only a
// chain's last WQE is signaled; the others produce no CQE.
func (m *model) Completed(e *sim.Engine, nic *hw.NIC, _ int32, msg *hw.Msg) {
	if msg.Tag&signaled == 0 {
		return
	}
	n := m.cfg.classes() * m.ranks
	w := m.nodes[nic.Index].workers[int(msg.QP)/n]
	w.cq.push(cqe{at: e.Now(), q: int32(int(msg.QP) % n)})
	if w.cq.len() == 1 {
		w.cqeArrived(e, e.Now())
	}
}

// producers runs the producers' phases: the argument is the producer.
type producers struct{ m *model }

func (h producers) Handle(e *sim.Engine, ph int32, p int64) { h.m.prods[p].handle(e, ph) }

// Prefetch asks for the producer, then for its thread and op record.
func (h producers) Prefetch(_ int32, arg int64, near bool) {
	p := h.m.prods[arg]
	if !near {
		prefetch.Line(unsafe.Pointer(p))
		return
	}
	if p.th != nil {
		prefetch.Line(unsafe.Pointer(p.th))
		prefetch.Line(unsafe.Pointer(h.m.ops.At(p.op)))
	}
}

// publisher runs publications: the argument is the ring.
type publisher struct{ m *model }

func (h publisher) Handle(e *sim.Engine, _ int32, r int64) { h.m.publish(e, r) }

// Prefetch asks for the ring, then for its first waiters.
func (h publisher) Prefetch(_ int32, arg int64, near bool) {
	r := h.m.rings[arg]
	if !near {
		prefetch.Line(unsafe.Pointer(r))
		return
	}
	if f := &r.waiters; f.len() > 0 {
		prefetch.Line(unsafe.Pointer(&f.q[f.head]))
	}
}

// publish makes the progress a worker wrote visible and wakes producers
// that wait for the space it frees.
func (m *model) publish(e *sim.Engine, arg int64) {
	r := m.rings[arg]
	c := &m.c
	lim := r.pubVal + r.size
	for r.waiters.len() > 0 && r.waiters.peek().slot < lim {
		p := r.waiters.pop().p
		p.th.T = max(p.th.T, c.hostDetect(r.pubAt))
		p.cached = r.pubVal
		p.at(e, p.th.T, phWrite)
	}
}

// hostRead is when a load of host memory that rank's thread issues at t
// returns: loads of one GPU overlap up to its PCIe read rate, then queue.
func (m *model) hostRead(rank int, t sim.Time) sim.Time {
	g := rank / m.perGPU
	s := max(t, m.readAt[g])
	m.readAt[g] = s + m.c.hostRead
	return s + m.c.hostLoad
}
