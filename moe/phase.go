package moe

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"unsafe"

	"moebench/hw"
	"moebench/internal/hugepage"
	"moebench/internal/prefetch"
	"moebench/sim"
	"moebench/transport"
)

// launchShape is a phase's kernel launch: S SMs of G warp groups of wpg
// warps (LL: llLaunch; normal mode: normalLaunch).
type launchShape struct{ S, G, wpg int }

// opSource is the op pooled warp i is posting (LL rebuilds it from the
// warp's tag and role).
type opSource interface {
	op(i int) transport.Op
}

// phaseRun is one phase of a layer on its own engine and connection, in
// either mode: the ranks' SMs and pooled posting warps, posts through the
// transport or as local copies, the bookkeeping every delivery shares, the
// ranks' readiness and the run to the end. Each mode's dispatch and combine
// embed it.
type phaseRun struct {
	ph     opSource
	cfg    *LayerConfig
	s      Shape
	l      *LLLayout
	g      *gpuModel
	e      *sim.Engine
	conn   transport.Conn
	id     sim.HandlerID
	ls     launchShape
	nl, R  int
	E      int
	pool   warpPool[warpState]
	sms    []hw.SM
	bg     *bgRunner
	probs  *problemList
	phase  *Phase
	locals slots[transport.Delivery] // local copies until visible
	// per rank
	issueDone []sim.Time
	lastStart []sim.Time // IssueStart of the post that ended last
	sendDone  []sim.Time // grid sync: every sending warp done
	sendLeft  []int32
	readyLeft int
	messages  int64
}

// init sets the phase up for shape s, its kernels launched as ls; src
// gives the op a pooled warp posts (nil for a phase that posts through
// send only).
func (b *phaseRun) init(src opSource, cfg *LayerConfig, s Shape, ls launchShape, g *gpuModel, probs *problemList, phase *Phase) {
	b.ph = src
	b.cfg, b.s, b.g, b.probs, b.phase = cfg, s, g, probs, phase
	b.ls = ls
	b.nl, b.R, b.E = b.s.LocalExperts(), b.s.Ranks, b.s.Physical()
	b.issueDone = make([]sim.Time, b.R)
	b.lastStart = make([]sim.Time, b.R)
	b.sendDone = make([]sim.Time, b.R)
	b.sendLeft = make([]int32, b.R)
	b.readyLeft = b.R
	phase.Ranks = make([]RankTiming, b.R)
}

// open builds the phase's engine and connection (openPhase) and
// registers h, the phase's event handler, on the engine.
func (b *phaseRun) open(h sim.Handler, delivered func(*sim.Engine, transport.Delivery), prefetch func(tag int64)) error {
	e, conn, err := openPhase(b.cfg, b.phase, delivered, prefetch, b.g.mem)
	if err != nil {
		return err
	}
	b.e, b.conn = e, conn
	b.id = e.Register(h)
	return nil
}

func (b *phaseRun) newWarp(i, rank, sm int, resume func(*sim.Engine, *transport.Warp)) {
	b.pool.a[i].w = transport.Warp{Rank: int32(rank), ID: int32(i),
		T: hw.NewThread(b.g.costsOf(rank), &b.sms[sm]), Resume: resume}
}

// post sends warp i's op at the warp's time: through the transport, or as
// a local copy (same rank) that the warp makes itself.
func (b *phaseRun) post(e *sim.Engine, i int) {
	w := &b.pool.a[i].w
	ws := &b.pool.a[i].st
	w.T.T = max(w.T.T, e.Now())
	ws.start = w.T.T
	op := b.ph.op(i)
	if op.Src != op.Dst {
		b.messages++
		b.conn.Post(e, w, op)
		return
	}
	// Same rank: a copy (or a local atomic) through device memory.
	if op.Atomic {
		w.T.Compute(w.T.C().Atomic)
	} else {
		w.T.T = b.g.copyN(int(w.Rank), w.T.T, int64(op.Bytes), int64(op.Bytes), b.g.kern.warpCopy)
	}
	t := transport.Times{IssueStart: ws.start, IssueEnd: w.T.T, Posted: w.T.T, Served: w.T.T, Sent: w.T.T, Arrived: w.T.T, Visible: w.T.T}
	idx := b.locals.put(transport.Delivery{Op: op, Times: t})
	e.At(t.Visible, b.id, opLocal, int64(idx))
	w.Resume(e, w)
}

// Prefetch asks for the warp a post event starts from.
func (b *phaseRun) Prefetch(op int32, arg int64, near bool) {
	if op == opPost && !near {
		prefetch.Line(unsafe.Pointer(&b.pool.a[arg]))
	}
}

// noteIssue records a finished post for the rank's issue-done time.
func (b *phaseRun) noteIssue(w *transport.Warp, start sim.Time) {
	if w.T.T > b.issueDone[w.Rank] {
		b.issueDone[w.Rank] = w.T.T
		b.lastStart[w.Rank] = start
	}
}

// accept does the bookkeeping every delivery shares: background traffic
// is only counted, the layer's bytes are tallied and the destination's
// last delivery noted. It reports whether the delivery is the layer's.
func (b *phaseRun) accept(dl transport.Delivery) bool {
	if dl.Op.Tag&tagBackground != 0 {
		b.bg.delivered++
		return false
	}
	b.countBytes(dl)
	rt := &b.phase.Ranks[dl.Op.Dst]
	rt.LastDelivered = max(rt.LastDelivered, dl.Times.Visible)
	return true
}

func (b *phaseRun) countBytes(d transport.Delivery) {
	if d.Op.Src == d.Op.Dst {
		return
	}
	if d.Times.NVLink {
		b.phase.NVLinkBytes += int64(d.Op.Bytes)
	} else {
		b.phase.ScaleOutBytes += int64(d.Op.Bytes)
	}
}

// overNVLink reports whether rank src reaches dst over NVLink: the layer
// allows it, the transport carries it and both sit in one NVLink domain.
func (b *phaseRun) overNVLink(src, dst int) bool {
	g := b.s.DomainGPUs()
	return b.cfg.NVLink && carriesNVLink(b.cfg.Transport) && src/g == dst/g
}

// selfPath is the critical path when the rank's own sends gated it.
func (b *phaseRun) selfPath(r int) transport.Times {
	return transport.Times{IssueStart: b.lastStart[r], IssueEnd: b.issueDone[r], Arrived: b.issueDone[r]}
}

// rankReady records a rank's outcome; after the last one the background
// stops.
func (b *phaseRun) rankReady(r int, ready sim.Time, bd Breakdown) {
	rt := &b.phase.Ranks[r]
	rt.Ready, rt.IssueDone, rt.Breakdown = ready, b.issueDone[r], bd
	b.readyLeft--
	if b.readyLeft == 0 {
		b.bg.stop()
	}
}

// run executes the phase; a layer that cannot finish (a transport that
// loses an op) is reported rather than looping forever under background.
func (b *phaseRun) run() error {
	b.e.RunUntil(runLimit)
	b.bg.stop()
	if b.phase.Failure == nil {
		b.e.Run()
	}
	if b.phase.failed(func(r int) bool { return b.phase.Ranks[r].Ready > 0 }) {
		b.readyLeft = 0
	}
	if b.readyLeft > 0 {
		return fmt.Errorf("transport %s: %d of %d ranks never became ready within %v of simulated time (an op was lost or a queue deadlocked)",
			b.cfg.Transport.Name(), b.readyLeft, b.R, runLimit)
	}
	b.phase.Messages = b.messages
	b.phase.Events = b.e.Handled()
	b.phase.Background = b.bg.count()
	return nil
}

// runLimit bounds a phase's simulated time.
const runLimit = 10 * sim.Second

// tagCount marks control atomics (counts, flags, tails); the low bits are
// the block.
const tagCount = int64(1) << 61

// Event ops every phase shares (LL's, and normal mode's posts).
const (
	opSMStep int32 = iota
	opPost
	opTaskReady
	opGridSync
	opLocal
	opRecvDone
	// opLaunch starts a rank's kernel: every SM (dispatch) or warp group
	// (combine) of it in turn, in the order their own events would run,
	// so that a launch of millions is R events pending, not millions.
	opLaunch
)

// Warp roles.
const (
	roleData int8 = iota
	roleCount
	roleCombine
	roleFlag
)

// warpState is the workload's state of one sending warp, in the few bytes a
// million warps can afford: its op in progress is only a tag, from which
// the phase rebuilds the op (opSource.op), and its global SM follows from
// its rank and SM (phaseRun.sm).
type warpState struct {
	start sim.Time // IssueStart of the post in progress
	// tag is the op's message (data roles) or its count's or flag's
	// index, expert·R + rank (control roles; tagCount is added back).
	tag  int32
	g    int32 // warp group (count and combine roles)
	j    int32 // cursor: expert round (count) or token (combine)
	role int8
}

// warpPool holds the sending warps of a phase in one slice, so that
// Warp.ID indexes the workload's own state, which sits beside the warp:
// a warp's every step touches both, and a million warps do not fit in
// cache.
type warpPool[S any] struct {
	a []pooled[S]
}

type pooled[S any] struct {
	w  transport.Warp
	st S
}

func (p *warpPool[S]) init(n int) {
	p.a = hugepage.MakeTouched[pooled[S]](n)
}

// slots holds the values of events in flight, indexed by the event's
// argument, reusing freed slots so that a long phase does not grow them.
type slots[T any] struct {
	a    []T
	free []int32
}

// put files v and returns its index.
func (s *slots[T]) put(v T) int32 {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		s.a[i] = v
		return i
	}
	s.a = append(s.a, v)
	return int32(len(s.a) - 1)
}

// take returns slot i's value and frees the slot.
func (s *slots[T]) take(i int32) T {
	s.free = append(s.free, i)
	return s.a[i]
}

// openPhase builds a fresh engine and connection for one phase: each
// kernel starts from idle queues, as after the barrier DeepEP's tests put
// between timed runs. The transport is handed the layer's faults as ph
// sees them (faultEnv), and copies between ranks of one GPU through mem,
// the GPU's bandwidth the layer's own copies take too.
func openPhase(cfg *LayerConfig, ph *Phase, delivered func(*sim.Engine, transport.Delivery), prefetch func(tag int64), mem *hw.Memory) (*sim.Engine, transport.Conn, error) {
	if report := cfg.Progress; report != nil {
		inner, n := delivered, 0
		delivered = func(e *sim.Engine, d transport.Delivery) {
			if n++; n == ProgressBatch {
				report(n)
				n = 0
			}
			inner(e, d)
		}
	}
	e := &sim.Engine{}
	s := cfg.Routing.Shape
	env := &transport.Env{E: e, Profile: cfg.Profile, Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, NVLDomain: s.DomainGPUs(),
		NVLink: cfg.NVLink, Delivered: delivered, PrefetchDelivery: prefetch, Log: cfg.Log}
	if cfg.RanksPerGPU > 1 {
		env.Mem = mem
	}
	faultEnv(env, ph, cfg.Background.origin())
	conn, err := cfg.Transport.Open(env)
	if err != nil {
		return nil, nil, fmt.Errorf("transport %s: %w", cfg.Transport.Name(), err)
	}
	return e, conn, nil
}

// bothPhases runs dispatch and combine, which share nothing they write,
// side by side on two goroutines, or one after the other in turn (combine
// not at all once dispatch failed). free, when not nil, is closed once
// dispatch no longer needs its core: at once in turn, else when it ends.
func bothPhases(inTurn bool, free chan struct{}, dispatch func() error, combine func()) {
	done := func() {
		if free != nil {
			close(free)
		}
	}
	if inTurn {
		done()
		if dispatch() == nil {
			// Dispatch's state is garbage now: collect it before combine
			// grows, rather than let the heap reach twice dispatch's peak,
			// and return it to the system: combine's slabs are mapped
			// beside the heap (sim.Slab), not made from what it keeps.
			debug.FreeOSMemory()
			combine()
		}
		return
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer done()
		dispatch()
	}()
	combine()
	<-finished
}

// runPhases runs a normal layer's dispatch and combine through
// bothPhases, each with a problem list of its own, merged into probs in
// that order; the error is dispatch's first, as a serial run's would be.
func runPhases(inTurn bool, probs *problemList, dispatch, combine func(*problemList) (transport.Resources, error)) (r1, r2 transport.Resources, err error) {
	var (
		probs2     problemList
		err1, err2 error
	)
	bothPhases(inTurn, nil, func() error {
		r1, err1 = dispatch(probs)
		return err1
	}, func() {
		r2, err2 = combine(&probs2)
	})
	if err = cmp.Or(err1, err2); err == nil {
		probs.merge(&probs2)
	}
	return r1, r2, err
}

// problemList collects correctness problems, capped like the oracles'.
type problemList struct {
	list []string
	n    int
}

func (p *problemList) add(format string, args ...any) {
	p.n++
	if len(p.list) < maxReported {
		p.list = append(p.list, fmt.Sprintf(format, args...))
	}
}

func (p *problemList) addErr(err error) {
	if err != nil {
		p.n++
		p.list = append(p.list, err.Error())
	}
}

// merge appends q's problems after p's.
func (p *problemList) merge(q *problemList) {
	for _, s := range q.list {
		if len(p.list) < maxReported {
			p.list = append(p.list, s)
		}
	}
	p.n += q.n
}

func (p *problemList) out() []string {
	if p.n > len(p.list) {
		return append(p.list, fmt.Sprintf("and %d more", p.n-len(p.list)))
	}
	return p.list
}

// NVLinkCarrier is implemented by transports that carry same-node peers
// over NVLink when the layer allows it (Env.NVLink); normal mode then runs
// DeepEP's intranode kernels, which never touch a NIC.
type NVLinkCarrier interface{ CarriesNVLink() bool }

func carriesNVLink(t transport.Transport) bool {
	c, ok := t.(NVLinkCarrier)
	return ok && c.CarriesNVLink()
}
