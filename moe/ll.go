package moe

import (
	"fmt"
	"unsafe"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/internal/hugepage"
	"moebench/internal/prefetch"
	"moebench/sim"
	"moebench/transport"
)

// Low-latency mode, message by message as DeepEP V1's internode_ll.cu
// kernels send it (deepep.md):
//
// Dispatch. SM s of a rank casts tokens s, s+S, ... to FP8 with all its
// warps, then warp j posts the token's j-th selection as one write of
// LLDispatchBytes to the expert's rank on channel = destination local
// expert. After the token loop, warp group g of SM s posts, for each
// expert it is responsible for (e = s·G+g, ...), one count atomic on the
// same channel with Flush, once every write of that expert has been
// posted. After a grid sync the receiving warp groups poll the count of
// their (local expert, source) block and copy its tokens into the packed
// layout; a rank is ready when every block is packed.
//
// Combine. Warp group g of SM s, for each (local expert, destination rank)
// block it is responsible for, sends every token it received in dispatch
// back as one LLCombineBytes write (each warp copies its tokens into the
// send buffer first), then one flag atomic for the expert. A rank waits
// for every expert's flag, the grid sync, then reduces top-k.

// llShape is the LL kernels' launch: S SMs of G warp groups of wpg warps.
type llShape struct{ S, G, wpg int }

// LLLaunch is the low-latency kernels' launch for a shape: SMs per rank,
// warp groups per SM and warps per group. numSMs 0 is DeepEP's choice on
// a GPU of deviceSMs SMs; the native engine launches the same.
func LLLaunch(s Shape, numSMs, deviceSMs int) (sms, groups, warpsPerGroup int) {
	l := llLaunch(s, numSMs, deviceSMs)
	return l.S, l.G, l.wpg
}

// LLBeyondDeepEP reports whether a shape's LL launch needs a warp group to
// serve more than one expert: DeepEP's kernels give each expert its own
// warp group and refuse more than 32 groups per SM (num_warps_per_group =
// 32 / groups must be positive), so at most 32 × SMs experts, 4,224 on a
// 132-SM GPU. Past that the model lets each warp group serve its experts
// in turn, a launch the library itself does not make; limit is the most
// experts the launch gives a warp group each.
func LLBeyondDeepEP(s Shape, numSMs, deviceSMs int) (limit int, beyond bool) {
	l := llLaunch(s, numSMs, deviceSMs)
	return l.S * l.G, s.Physical() > l.S*l.G
}

func llLaunch(s Shape, numSMs, deviceSMs int) llShape {
	e := s.Physical()
	var S, G int
	if numSMs > 0 {
		S = numSMs
		G = min(warpsPerSM, (e+S-1)/S)
	} else {
		G = (e + deviceSMs - 1) / deviceSMs
		G = min(G, warpsPerSM)
		S = (e + G - 1) / G
		S = min(S, deviceSMs)
	}
	return llShape{S: S, G: G, wpg: warpsPerSM / G}
}

// LLBufferBytes is DeepEP's low-latency buffer per rank
// (get_low_latency_rdma_size_hint): double-buffered send, receive and
// signalling areas, each message slot sized for BF16 or FP8 dispatch,
// whichever is larger.
func LLBufferBytes(s Shape) int64 {
	e, t := int64(s.Physical()), int64(s.Tokens)
	h := int64(s.Hidden)
	scales := (h + ScaleGroup - 1) / ScaleGroup
	dmsg := int64(LLHeaderBytes) + max(h*2, h+scales*4)
	cmsg := h * 2
	send := max(t*dmsg, e*t*cmsg)
	recv := max(e*t*dmsg, e*t*cmsg)
	signal := e * 4
	return 2 * (send + recv + signal)
}

// Warp roles.
const (
	roleData int8 = iota
	roleCount
	roleCombine
	roleFlag
)

// dataOp is a write of bytes from src to (dst, local expert ch).
func dataOp(src, dst, ch, bytes int, tag int64) transport.Op {
	return transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: bytes, Tag: tag}
}

// ctlOp is a count or flag atomic from src to (dst, local expert ch): an
// 8 B fetch-add that flushes.
func ctlOp(src, dst, ch int, tag int64) transport.Op {
	return transport.Op{Src: src, Dst: dst, Channel: ch, Bytes: 8, Atomic: true, Flush: true, Tag: tag}
}

// llWarp is the workload's state of one sending warp, in the few bytes a
// million warps can afford: its op in progress is only a tag, from which
// the phase rebuilds the op (llPhase.op), and its global SM follows from
// its rank and SM (llBase.sm).
type llWarp struct {
	start sim.Time // IssueStart of the post in progress
	// tag is the op's message (data roles) or its count's or flag's
	// index, expert·R + rank (control roles; tagCount is added back).
	tag  int32
	g    int32 // warp group (count and combine roles)
	j    int32 // cursor: expert round (count) or token (combine)
	role int8
}

// Event ops of the LL phases.
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

// llBase is what both LL phases share.
// llPhase is the op pooled warp i is posting (LL rebuilds it from the
// warp's tag and role).
type llPhase interface {
	op(i int) transport.Op
}

type llBase struct {
	ph     llPhase
	cfg    *LayerConfig
	s      Shape
	l      *LLLayout
	g      *gpuModel
	e      *sim.Engine
	conn   transport.Conn
	id     sim.HandlerID
	ls     llShape
	nl, R  int
	E      int
	pool   warpPool[llWarp]
	sms    []hw.SM
	bg     *bgRunner
	probs  *problemList
	phase  *Phase
	locals []transport.Delivery
	freeL  []int32
	// per rank
	issueDone  []sim.Time
	lastStart  []sim.Time // IssueStart of the post that ended last
	sendDone   []sim.Time // grid sync: every sending warp done
	sendLeft   []int32
	readyLeft  int
	messages   int64
	deliveries int64
}

func (b *llBase) init(ph llPhase, cfg *LayerConfig, l *LLLayout, g *gpuModel, probs *problemList, phase *Phase) {
	b.ph = ph
	b.cfg, b.s, b.l, b.g, b.probs, b.phase = cfg, l.Shape, l, g, probs, phase
	b.ls = llLaunch(b.s, cfg.NumSMs, g.costs.SMs)
	b.nl, b.R, b.E = b.s.LocalExperts(), b.s.Ranks, b.s.Physical()
	b.issueDone = make([]sim.Time, b.R)
	b.lastStart = make([]sim.Time, b.R)
	b.sendDone = make([]sim.Time, b.R)
	b.sendLeft = make([]int32, b.R)
	b.readyLeft = b.R
	phase.Ranks = make([]RankTiming, b.R)
}

func (b *llBase) newWarp(i, rank, sm int, resume func(*sim.Engine, *transport.Warp)) {
	b.pool.a[i].w = transport.Warp{Rank: int32(rank), ID: int32(i),
		T: hw.NewThread(b.g.costsOf(rank), &b.sms[sm]), Resume: resume}
}

// post sends warp i's op at the warp's time: through the transport, or as
// a local copy (same rank) that the warp makes itself.
func (b *llBase) post(e *sim.Engine, i int) {
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
	var idx int32
	if n := len(b.freeL); n > 0 {
		idx = b.freeL[n-1]
		b.freeL = b.freeL[:n-1]
	} else {
		b.locals = append(b.locals, transport.Delivery{})
		idx = int32(len(b.locals) - 1)
	}
	b.locals[idx] = transport.Delivery{Op: op, Times: t}
	e.At(t.Visible, b.id, opLocal, int64(idx))
	w.Resume(e, w)
}

// Prefetch asks for the warp a post event starts from.
func (b *llBase) Prefetch(op int32, arg int64, near bool) {
	if op == opPost && !near {
		prefetch.Line(unsafe.Pointer(&b.pool.a[arg]))
	}
}

// noteIssue records a finished post for the rank's issue-done time.
func (b *llBase) noteIssue(w *transport.Warp, start sim.Time) {
	if w.T.T > b.issueDone[w.Rank] {
		b.issueDone[w.Rank] = w.T.T
		b.lastStart[w.Rank] = start
	}
}

// accept does the bookkeeping every delivery shares: background traffic
// is only counted, the layer's bytes are tallied and the destination's
// last delivery noted. It reports whether the delivery is the layer's.
func (b *llBase) accept(dl transport.Delivery) bool {
	if dl.Op.Tag&tagBackground != 0 {
		b.bg.delivered++
		return false
	}
	b.countBytes(dl)
	rt := &b.phase.Ranks[dl.Op.Dst]
	rt.LastDelivered = max(rt.LastDelivered, dl.Times.Visible)
	return true
}

func (b *llBase) countBytes(d transport.Delivery) {
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
func (b *llBase) overNVLink(src, dst int) bool {
	g := b.s.DomainGPUs()
	return b.cfg.NVLink && carriesNVLink(b.cfg.Transport) && src/g == dst/g
}

// selfPath is the critical path when the rank's own sends gated it.
func (b *llBase) selfPath(r int) transport.Times {
	return transport.Times{IssueStart: b.lastStart[r], IssueEnd: b.issueDone[r], Arrived: b.issueDone[r]}
}

// rankReady records a rank's outcome; after the last one the background
// stops.
func (b *llBase) rankReady(r int, ready sim.Time, bd Breakdown) {
	rt := &b.phase.Ranks[r]
	rt.Ready, rt.IssueDone, rt.Breakdown = ready, b.issueDone[r], bd
	b.readyLeft--
	if b.readyLeft == 0 {
		b.bg.stop()
	}
}

// run executes the phase; a layer that cannot finish (a transport that
// loses an op) is reported rather than looping forever under background.
func (b *llBase) run() error {
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

// --- dispatch ---

type llSM struct {
	rank      int32
	s         int32
	iter      int32
	pending   int32
	countLeft int32
	warp0     int32
	t         sim.Time
}

// llSend is a rank's writes to one expert, read and written together as
// each is posted: one cache line for all three.
type llSend struct {
	lastPost  sim.Time // when the last of them was posted
	remaining int32    // writes not yet posted
	waiter    int32    // the count warp waiting for them, -1 none
}

// llCount is a delivered count whose receive task has not run yet: its
// path and when the receiver observes it. A task's entry in tasks is 0
// before its count arrives, then 1 + its llCount's index in counts, then
// taskDone once copied; the rank's gate keeps the path that set it.
type llCount struct {
	times  transport.Times
	detect sim.Time
}

const taskDone = -1

type llDispatch struct {
	llBase
	nw        int // warps per SM
	smst      []llSM
	sends     []llSend // [rank][expert]
	sendMem   hugepage.Mappings[llSend]
	posting   int     // ranks still posting; sends is dropped at 0
	tasks     []int32 // per receive task (expert·R + source), see llCount
	counts    sim.Slab[llCount]
	gateT     []transport.Times
	gateDet   []sim.Time // the gate's count detection
	grpNext   []int32    // [rank][group] next round
	grpFree   []sim.Time // [rank][group]
	tasksLeft []int32    // per rank
	ready     []sim.Time
	gate      []int32
	gateStart []sim.Time
	// correctness
	check   *DispatchCheck
	sumGot  []uint64
	msgBase int64
}

func runLLDispatch(cfg *LayerConfig, l *LLLayout, blocks LLBlocks, g *gpuModel, probs *problemList, ph *Phase) (transport.Resources, *DispatchCheck, error) {
	d := &llDispatch{}
	d.init(d, cfg, l, g, probs, ph)
	e, conn, err := openPhaseOn(cfg, ph, d.delivered, d.prefetchDelivery, g.mem)
	if err != nil {
		return transport.Resources{}, nil, err
	}
	d.e, d.conn = e, conn
	if err := checkDepth(d.s, cfg.Transport.QueueDepth()); err != nil {
		return transport.Resources{}, nil, err
	}
	d.id = e.Register(d)
	S, G, R, E := d.ls.S, d.ls.G, d.R, d.E
	k := d.s.TopK
	d.nw = max(k, G)
	d.sms = make([]hw.SM, R*S)
	d.smst = make([]llSM, R*S)
	d.pool.init(R * S * d.nw)
	resume := d.resume // one closure for every warp, not one each
	for sm := range d.smst {
		r := sm / S
		d.sms[sm].Lanes = k
		d.smst[sm] = llSM{rank: int32(r), s: int32(sm % S), warp0: int32(sm * d.nw), countLeft: int32(G)}
		for j := range d.nw {
			d.newWarp(sm*d.nw+j, r, sm, resume)
		}
	}
	for r := range R {
		d.sendLeft[r] = int32(S)
		e.At(cfg.Background.origin()+g.on(r, g.kern.start), d.id, opLaunch, int64(r))
	}
	// Only the ranks' posts read the sends, all within the phase's first
	// microseconds; mapped, they leave before its messages peak.
	d.sends = d.sendMem.MapTouched(R * E)
	d.posting = R
	for i := range d.sends {
		d.sends[i] = llSend{remaining: l.Counts[i], waiter: -1}
	}
	d.tasks = hugepage.Make[int32](E * R)
	d.gateT = make([]transport.Times, R)
	d.gateDet = make([]sim.Time, R)
	d.grpNext = make([]int32, R*S*G)
	d.grpFree = make([]sim.Time, R*S*G)
	d.tasksLeft = make([]int32, R)
	d.ready = make([]sim.Time, R)
	d.gate = make([]int32, R)
	d.gateStart = make([]sim.Time, R)
	for r := range R {
		d.tasksLeft[r] = int32(d.nl * R)
	}
	d.check = l.NewDispatchCheck(blocks)
	d.sumGot = make([]uint64, R)
	d.bg = newBackground(e, cfg.Background, conn, g, R, d.nl)
	if err := d.run(); err != nil {
		return transport.Resources{}, nil, err
	}
	ph.finish(llBytes(l, d.s.LLDispatchBytes()), cfg.Background.origin())
	if !cfg.NoPayload && ph.Failure == nil {
		want := make([]uint64, R)
		for src := range R {
			for _, m := range l.From(src) {
				want[m.DstRank] += Payload(src, int(m.Token))
			}
		}
		for r := range R {
			if want[r] != d.sumGot[r] {
				probs.add("dispatch payload checksum: rank %d received %016x, want %016x", r, d.sumGot[r], want[r])
			}
		}
	}
	return conn.Resources(), d.check, nil
}

// llBytes is each rank's algorithm-bandwidth numerator: its valid
// selections × the message size.
func llBytes(l *LLLayout, msg int) []int64 {
	out := make([]int64, l.Shape.Ranks)
	for r := range out {
		out[r] = int64(l.Start[r+1]-l.Start[r]) * int64(msg)
	}
	return out
}

func (d *llDispatch) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case opSMStep:
		d.step(e, int(arg))
	case opLaunch:
		for sm := int(arg) * d.ls.S; sm < (int(arg)+1)*d.ls.S; sm++ {
			d.step(e, sm)
		}
	case opPost:
		d.post(e, int(arg))
	case opTaskReady:
		r, i := d.task(int(arg))
		d.tryGroup(e, r, i%(d.ls.S*d.ls.G))
	case opGridSync:
		r := int(arg)
		for grp := range d.ls.S * d.ls.G {
			d.tryGroup(e, r, grp)
		}
	case opLocal:
		dl := d.locals[arg]
		d.freeL = append(d.freeL, int32(arg))
		d.delivered(e, dl)
	}
}

// step runs one token of SM sm's loop: cast with every warp, then post the
// token's selections from warps 0..k-1.
func (d *llDispatch) step(e *sim.Engine, sm int) {
	st := &d.smst[sm]
	r := int(st.rank)
	tok := int(st.s) + int(st.iter)*d.ls.S
	if tok >= d.cfg.Routing.Tokens[r] {
		d.startCounts(e, sm)
		return
	}
	st.iter++
	k := d.s.TopK
	msg := d.s.LLDispatchBytes()
	// Cast: read the BF16 token, write the FP8 message, all warps of the SM.
	castBytes := int64(d.s.Hidden*2 + msg)
	tc := d.g.copyN(r, max(st.t, e.Now()), castBytes, castBytes/warpsPerSM, d.g.kern.cast)
	st.t = tc
	idx := d.cfg.Routing.Idx[r][tok*k : tok*k+k]
	// Messages of rank r are in (token, slot) order; find this token's.
	mi := d.msgIndex(r, tok)
	for j, ex := range idx {
		if ex < 0 {
			continue
		}
		mi++
		wi := int(st.warp0) + j
		w := &d.pool.a[wi].w
		ws := &d.pool.a[wi].st
		ws.role = roleData
		ws.tag = int32(mi - 1)
		w.T.T = max(w.T.T, tc)
		st.pending++
		e.At(w.T.T, d.id, opPost, int64(wi))
	}
	if st.pending == 0 {
		e.At(st.t, d.id, opSMStep, int64(sm))
	}
}

// msgIndex finds the first message of token tok of rank r: messages are in
// (token, slot) order, so a binary search over the rank's range does it.
func (d *llDispatch) msgIndex(r, tok int) int {
	lo, hi := d.l.Start[r], d.l.Start[r+1]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if int(d.l.Msgs[mid].Token) < tok {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// sm is warp w's global SM, rank·S + s: an SM's warps lie together in
// the pool.
func (d *llDispatch) sm(w *transport.Warp) int { return int(w.ID) / d.nw }

func (d *llDispatch) resume(e *sim.Engine, w *transport.Warp) {
	ws := &d.pool.a[w.ID].st
	d.noteIssue(w, ws.start)
	sm := d.sm(w)
	st := &d.smst[sm]
	r := int(w.Rank)
	switch ws.role {
	case roleData:
		m := d.l.Msgs[ws.tag]
		if dst := int(m.DstRank); dst != r && d.overNVLink(r, dst) && !d.g.mem.SameGPU(r, dst) {
			// The warp counts the token sent with a GPU-scope release
			// (atomic_add_release_global of the expert's finish
			// counter), which waits for its NVLink stores to land; for
			// ranks of one GPU the fitted peer costs hold it already.
			w.T.Fence(w.T.C().FenceGPU)
		}
		x := r*d.E + int(m.DstRank)*d.nl + int(m.LocalExpert)
		sd := &d.sends[x]
		sd.remaining--
		sd.lastPost = max(sd.lastPost, w.T.T)
		if sd.remaining == 0 {
			if wi := sd.waiter; wi >= 0 {
				sd.waiter = -1
				ww := &d.pool.a[wi].w
				ww.T.T = max(ww.T.T, sd.lastPost)
				e.At(max(ww.T.T, e.Now()), d.id, opPost, int64(wi))
			}
		}
		st.t = max(st.t, w.T.T)
		st.pending--
		if st.pending == 0 {
			e.At(max(st.t, e.Now()), d.id, opSMStep, int64(sm))
		}
	case roleCount:
		ws.j++
		d.nextCount(e, int(w.ID))
	}
}

// op is a dispatch warp's op: a token's write (the tag is its message)
// or an expert's count (the tag is the count's receive task).
func (d *llDispatch) op(i int) transport.Op {
	src, ws := int(d.pool.a[i].w.Rank), &d.pool.a[i].st
	if ws.role == roleCount {
		ex := int(ws.tag) / d.R
		return ctlOp(src, ex/d.nl, ex%d.nl, tagCount|int64(ws.tag))
	}
	m := &d.l.Msgs[ws.tag]
	return dataOp(src, int(m.DstRank), int(m.LocalExpert), d.s.LLDispatchBytes(), int64(ws.tag))
}

// startCounts runs after SM sm's token loop (__syncthreads): its warp
// groups post the count of each expert they are responsible for.
func (d *llDispatch) startCounts(e *sim.Engine, sm int) {
	st := &d.smst[sm]
	t := max(st.t, e.Now())
	for j := range d.nw {
		t = max(t, d.pool.a[int(st.warp0)+j].w.T.T)
	}
	for j := range d.nw {
		d.pool.a[int(st.warp0)+j].w.T.T = t
	}
	for g := range d.ls.G {
		wi := int(st.warp0) + g
		ws := &d.pool.a[wi].st
		ws.role, ws.g, ws.j = roleCount, int32(g), 0
		d.nextCount(e, wi)
	}
}

func (d *llDispatch) nextCount(e *sim.Engine, wi int) {
	w := &d.pool.a[wi].w
	ws := &d.pool.a[wi].st
	st := &d.smst[d.sm(w)]
	r := int(w.Rank)
	ex := (int(st.s)*d.ls.G + int(ws.g)) + int(ws.j)*d.ls.S*d.ls.G
	if ex >= d.E {
		st.countLeft--
		if st.countLeft == 0 {
			d.sendLeft[r]--
			if d.sendLeft[r] == 0 {
				if d.posting--; d.posting == 0 {
					d.sendMem.UnmapAll()
					d.sends = nil
				}
				d.sendDone[r] = d.issueDone[r] + d.g.on(r, d.g.kern.gridSync)
				e.At(max(d.sendDone[r], e.Now()), d.id, opGridSync, int64(r))
			}
		}
		return
	}
	ws.tag = int32(ex*d.R + r)
	x := r*d.E + ex
	sd := &d.sends[x]
	if sd.remaining > 0 {
		sd.waiter = int32(wi)
		return
	}
	w.T.T = max(w.T.T, sd.lastPost)
	e.At(max(w.T.T, e.Now()), d.id, opPost, int64(wi))
}

// task splits receive task t (expert·R + source) into its rank and its
// index there, local expert·R + source.
func (d *llDispatch) task(t int) (r, i int) {
	r = t / d.R / d.nl
	return r, t - r*d.nl*d.R
}

// prefetchDelivery asks for what delivered reads first: a count's receive
// task, or a token's message, whose task it then finds.
func (d *llDispatch) prefetchDelivery(tag int64) {
	if tag&tagBackground != 0 {
		return
	}
	if tag&tagCount != 0 {
		prefetch.Line(unsafe.Pointer(&d.tasks[tag&^tagCount]))
		return
	}
	prefetch.Line(unsafe.Pointer(&d.l.Msgs[tag]))
}

// Prefetch also asks for what a receive task's event reads: the task, its
// group's cursor and free time and its token count, then its count.
func (d *llDispatch) Prefetch(op int32, arg int64, near bool) {
	if op != opTaskReady {
		d.llBase.Prefetch(op, arg, near)
		return
	}
	t := int(arg)
	r, i := d.task(t)
	if near {
		if ci := d.tasks[t] - 1; ci >= 0 {
			prefetch.Line(unsafe.Pointer(d.counts.At(ci)))
		}
		return
	}
	gi := r*d.ls.S*d.ls.G + i%(d.ls.S*d.ls.G)
	prefetch.Line(unsafe.Pointer(&d.tasks[t]))
	prefetch.Line(unsafe.Pointer(&d.grpNext[gi]))
	prefetch.Line(unsafe.Pointer(&d.grpFree[gi]))
	prefetch.Line(unsafe.Pointer(&d.l.Counts[i%d.R*d.E+r*d.nl+i/d.R]))
}

func (d *llDispatch) delivered(e *sim.Engine, dl transport.Delivery) {
	if !d.accept(dl) {
		return
	}
	tag, dst := dl.Op.Tag, dl.Op.Dst
	if tag&tagCount != 0 {
		t := int(tag &^ tagCount)
		if d.tasks[t] != 0 {
			d.probs.add("dispatch: count of expert %d from rank %d delivered twice", t/d.R, t%d.R)
			return
		}
		ci := d.counts.Alloc()
		c := d.counts.At(ci)
		*c = llCount{times: dl.Times, detect: d.g.pollDetect(dl.Times.Visible)}
		d.tasks[t] = ci + 1
		e.At(c.detect, d.id, opTaskReady, int64(t))
		return
	}
	m := d.l.Msgs[tag]
	src := dl.Op.Src
	t := (int(m.DstRank)*d.nl+int(m.LocalExpert))*d.R + src
	if d.tasks[t] != 0 {
		d.probs.add("dispatch: rank %d token %d reached expert %d after its count: the receiver would copy a stale slot",
			src, m.Token, int(m.DstRank)*d.nl+int(m.LocalExpert))
	}
	d.check.Add(Delivery{SrcRank: int32(src), Token: m.Token, DstRank: int32(dst), LocalExpert: m.LocalExpert, Slot: m.RecvSlot})
	if !d.cfg.NoPayload {
		d.sumGot[dst] += Payload(src, int(m.Token))
	}
}

// tryGroup starts the receive rounds of warp group grp of rank r whose
// count has been observed, once the grid sync has passed.
func (d *llDispatch) tryGroup(e *sim.Engine, r, grp int) {
	if d.sendLeft[r] > 0 || e.Now() < d.sendDone[r] {
		return
	}
	SG := d.ls.S * d.ls.G
	gi := r*SG + grp
	msg := int64(d.s.LLDispatchBytes())
	for {
		i := grp + int(d.grpNext[gi])*SG
		if i >= d.nl*d.R {
			return
		}
		le, src := i/d.R, i%d.R
		ex := r*d.nl + le
		t := ex*d.R + src
		ci := d.tasks[t] - 1
		if ci < 0 || d.counts.At(ci).detect > e.Now() {
			return
		}
		c := d.counts.At(ci)
		d.grpNext[gi]++
		start := max(e.Now(), d.grpFree[gi])
		n := int64(d.l.Counts[src*d.E+ex])
		rounds := (n + int64(d.ls.wpg) - 1) / int64(d.ls.wpg)
		k := &d.g.kern
		end := d.g.copyIn(d.g.recvMem, r, start+d.g.on(r, k.recvTask), n*msg, rounds*msg, sim.Time(rounds)*(k.warpCopy+k.recvToken))
		d.grpFree[gi] = end
		if end > d.ready[r] {
			d.ready[r], d.gate[r], d.gateStart[r] = end, int32(t), start
			d.gateT[r], d.gateDet[r] = c.times, c.detect
		}
		d.counts.Free(ci)
		d.tasks[t] = taskDone
		d.tasksLeft[r]--
		if d.tasksLeft[r] == 0 {
			d.finishRank(r)
		}
	}
}

func (d *llDispatch) finishRank(r int) {
	t := int(d.gate[r])
	var bd Breakdown
	if d.gateDet[r] >= d.sendDone[r] {
		op := transport.Op{Atomic: true, Bytes: 8}
		bd = attribute(d.cfg.Background.origin(), d.gateT[r], t%d.R == r, d.g.nic.floor(op, d.gateT[r].NVLink), d.gateDet[r], d.gateStart[r], d.ready[r], CauseCopy)
	} else {
		bd = attribute(d.cfg.Background.origin(), d.selfPath(r), true, nicShare{}, 0, d.gateStart[r], d.ready[r], CauseCopy)
	}
	d.rankReady(r, d.ready[r], bd)
}

// --- combine ---

// llGroup is one warp group's progress through its combine blocks, in 16
// bytes: combine has one per (rank, SM, group), 16.8 million at 4,096
// ranks. Group gi is group gi mod S·G of rank gi / (S·G); its warps are
// warp0[gi] on, nw of them.
type llGroup struct {
	t       sim.Time
	round   int32
	pending uint8 // warps still sending this block
	nw      uint8 // at most a group's warps, 32
}

type llCombine struct {
	llBase
	groups    []llGroup
	warp0     []int32  // per group
	blocks    LLBlocks // the messages each (expert, source) block sends back
	flagSeen  []bool   // [expert·R + dst]
	flagsLeft []int32  // per rank
	maxDetect []sim.Time
	gateT     []transport.Times
	gateLocal []bool
	check     *combineCheck
}

// runLLCombine simulates LL combine; its tokens are checked on another
// goroutine once free is closed (see combineCheck).
func runLLCombine(cfg *LayerConfig, l *LLLayout, blocks LLBlocks, g *gpuModel, probs *problemList, ph *Phase, free <-chan struct{}) (transport.Resources, error) {
	c := &llCombine{blocks: blocks}
	c.init(c, cfg, l, g, probs, ph)
	e, conn, err := openPhaseOn(cfg, ph, c.delivered, c.prefetchDelivery, g.mem)
	if err != nil {
		return transport.Resources{}, err
	}
	c.e, c.conn = e, conn
	c.id = e.Register(c)
	S, G, R, E := c.ls.S, c.ls.G, c.R, c.E
	// Each group gets as many warps as its largest block needs, up to wpg.
	SG := S * G
	c.groups = make([]llGroup, R*SG)
	c.warp0 = make([]int32, R*SG)
	nwarps := 0
	for r := range R {
		for grp := range SG {
			most := 0
			for i := grp; i < c.nl*R; i += SG {
				le, dst := i/R, i%R
				b := (r*c.nl+le)*R + dst
				most = max(most, int(c.blocks.Off[b+1]-c.blocks.Off[b]))
			}
			nw := max(1, min(most, c.ls.wpg))
			c.groups[r*SG+grp] = llGroup{nw: uint8(nw)}
			c.warp0[r*SG+grp] = int32(nwarps)
			nwarps += nw
		}
	}
	c.sms = make([]hw.SM, R*S)
	c.pool.init(nwarps)
	resume := c.resume
	for gi := range c.groups {
		r := gi / SG
		sm := r*S + gi%SG/G
		c.sms[sm].Lanes = warpsPerSM
		w0 := int(c.warp0[gi])
		for j := range int(c.groups[gi].nw) {
			c.newWarp(w0+j, r, sm, resume)
			c.pool.a[w0+j].st.g = int32(gi)
		}
	}
	for r := range R {
		c.sendLeft[r] = int32(SG)
		e.At(cfg.Background.origin()+g.on(r, g.kern.start), c.id, opLaunch, int64(r))
	}
	c.flagSeen = hugepage.Make[bool](E * R)
	c.flagsLeft = make([]int32, R)
	c.maxDetect = make([]sim.Time, R)
	c.gateT = make([]transport.Times, R)
	c.gateLocal = make([]bool, R)
	for r := range R {
		c.flagsLeft[r] = int32(E)
	}
	c.check = newCombineCheck(l, cfg.Routing, free)
	c.bg = newBackground(e, cfg.Background, conn, g, R, c.nl)
	err = c.run()
	c.check.partial = ph.Failure != nil
	checked := c.check.wait()
	if err != nil {
		return transport.Resources{}, err
	}
	ph.finish(llBytes(l, c.s.LLCombineBytes()), cfg.Background.origin())
	probs.merge(checked)
	return conn.Resources(), nil
}

// Prefetch also asks, nearer the event, for a post's warp group.
func (c *llCombine) Prefetch(op int32, arg int64, near bool) {
	if op == opPost && near {
		prefetch.Line(unsafe.Pointer(&c.groups[c.pool.a[arg].st.g]))
		return
	}
	c.llBase.Prefetch(op, arg, near)
}

func (c *llCombine) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case opSMStep:
		c.startBlock(e, int(arg))
	case opLaunch:
		SG := c.ls.S * c.ls.G
		for gi := int(arg) * SG; gi < (int(arg)+1)*SG; gi++ {
			c.startBlock(e, gi)
		}
	case opPost:
		c.post(e, int(arg))
	case opLocal:
		dl := c.locals[arg]
		c.freeL = append(c.freeL, int32(arg))
		c.delivered(e, dl)
	case opGridSync, opRecvDone:
		c.maybeReduce(e, int(arg))
	}
}

// block returns group gi's current (local expert, destination) block, or
// false when it has none left.
func (c *llCombine) block(gi int) (le, dst int, ok bool) {
	SG := c.ls.S * c.ls.G
	i := gi%SG + int(c.groups[gi].round)*SG
	if i >= c.nl*c.R {
		return 0, 0, false
	}
	return i / c.R, i % c.R, true
}

// startBlock starts group gi's next block: its warps stripe the tokens.
func (c *llCombine) startBlock(e *sim.Engine, gi int) {
	gr := &c.groups[gi]
	r := gi / (c.ls.S * c.ls.G)
	le, dst, ok := c.block(gi)
	if !ok {
		c.sendLeft[r]--
		if c.sendLeft[r] == 0 {
			c.sendDone[r] = c.issueDone[r]
			e.At(max(c.sendDone[r], e.Now()), c.id, opGridSync, int64(r))
		}
		return
	}
	gr.pending = gr.nw
	w0 := int(c.warp0[gi])
	for j := range int(gr.nw) {
		wi := w0 + j
		ws := &c.pool.a[wi].st
		ws.role, ws.j = roleCombine, int32(j)
		c.pool.a[wi].w.T.T = max(c.pool.a[wi].w.T.T, gr.t)
		c.nextToken(e, wi, le, dst)
	}
}

// nextToken has warp wi copy its next token of the block into the send
// buffer and post it, or reports the warp done with the block.
func (c *llCombine) nextToken(e *sim.Engine, wi, le, dst int) {
	w := &c.pool.a[wi].w
	ws := &c.pool.a[wi].st
	gr := &c.groups[ws.g]
	r := int(w.Rank)
	b := (r*c.nl+le)*c.R + dst
	n := int(c.blocks.Off[b+1] - c.blocks.Off[b])
	if int(ws.j) >= n {
		gr.t = max(gr.t, w.T.T)
		gr.pending--
		if gr.pending == 0 {
			// bar.sync of the group, then its first warp posts the flag:
			// this warp is the group's (j mod nw)-th.
			f := wi - int(ws.j)%int(gr.nw)
			fw := &c.pool.a[f].w
			fs := &c.pool.a[f].st
			fw.T.T = max(fw.T.T, gr.t)
			ex := r*c.nl + le
			fs.role = roleFlag
			fs.tag = int32(ex*c.R + dst)
			e.At(max(fw.T.T, e.Now()), c.id, opPost, int64(f))
		}
		return
	}
	mi := c.blocks.Msg[int(c.blocks.Off[b])+int(ws.j)]
	bytes := c.s.LLCombineBytes()
	ws.tag = int32(mi)
	if dst != r && !c.overNVLink(r, dst) {
		// Through the NIC: stage the token in the send buffer first. A
		// peer over NVLink takes the expert's output straight from x
		// into its receive buffer, the warp's copy the only one
		// (internode_ll.cu @ de8cfca3, combine: dst_p2p_ptr != 0
		// copies x_int4 to dst_int4_ptr).
		w.T.T = c.g.copyN(r, max(w.T.T, e.Now()), int64(bytes), int64(bytes), c.g.kern.warpCopy)
	}
	e.At(max(w.T.T, e.Now()), c.id, opPost, int64(wi))
}

// op is a combine warp's op: a token back to its source (the tag is its
// dispatch message; the group's block says where) or an expert's flag
// (the tag is the flag's index, expert·R + destination).
func (c *llCombine) op(i int) transport.Op {
	src, ws := int(c.pool.a[i].w.Rank), &c.pool.a[i].st
	if ws.role == roleFlag {
		f := int(ws.tag)
		return ctlOp(src, f%c.R, f/c.R%c.nl, tagCount|int64(ws.tag))
	}
	le, dst, _ := c.block(int(ws.g))
	return dataOp(src, dst, le, c.s.LLCombineBytes(), int64(ws.tag))
}

func (c *llCombine) resume(e *sim.Engine, w *transport.Warp) {
	ws := &c.pool.a[w.ID].st
	c.noteIssue(w, ws.start)
	gr := &c.groups[ws.g]
	switch ws.role {
	case roleCombine:
		le, dst, _ := c.block(int(ws.g))
		ws.j += int32(gr.nw)
		c.nextToken(e, int(w.ID), le, dst)
	case roleFlag:
		gr.t = max(gr.t, w.T.T)
		gr.round++
		e.At(max(gr.t, e.Now()), c.id, opSMStep, int64(ws.g))
	}
}

// prefetchDelivery asks for a flag's seen mark.
func (c *llCombine) prefetchDelivery(tag int64) {
	if tag&tagBackground == 0 && tag&tagCount != 0 {
		prefetch.Line(unsafe.Pointer(&c.flagSeen[tag&^tagCount]))
	}
}

func (c *llCombine) delivered(e *sim.Engine, dl transport.Delivery) {
	if !c.accept(dl) {
		return
	}
	tag, dst := dl.Op.Tag, dl.Op.Dst
	if tag&tagCount != 0 {
		f := int(tag &^ tagCount)
		if c.flagSeen[f] {
			c.probs.add("combine: flag of expert %d at rank %d delivered twice", f/c.R, dst)
			return
		}
		c.flagSeen[f] = true
		c.check.logFlag(int64(f))
		det := c.g.pollDetect(dl.Times.Visible)
		if det >= c.maxDetect[dst] {
			c.maxDetect[dst], c.gateT[dst], c.gateLocal[dst] = det, dl.Times, dl.Op.Src == dst
		}
		c.flagsLeft[dst]--
		if c.flagsLeft[dst] == 0 {
			e.At(det, c.id, opRecvDone, int64(dst))
		}
		return
	}
	c.check.logToken(dst, tag)
}

// maybeReduce runs rank r's reduction once every flag was observed and its
// own sends passed the grid sync.
func (c *llCombine) maybeReduce(e *sim.Engine, r int) {
	if c.flagsLeft[r] > 0 || c.sendLeft[r] > 0 || c.phase.Ranks[r].Ready > 0 {
		return
	}
	// Every flag seen, the rank's grid sync, then the reduction.
	start := max(c.maxDetect[r], c.sendDone[r]) + c.g.on(r, c.g.kern.gridSync)
	if e.Now() < start {
		e.At(start, c.id, opRecvDone, int64(r))
		return
	}
	k := c.s.TopK
	tokens := int64(c.cfg.Routing.Tokens[r])
	perToken := int64(k+1) * int64(c.s.LLCombineBytes())
	rounds := (tokens + int64(c.ls.S) - 1) / int64(c.ls.S)
	per := rounds * perToken / warpsPerSM
	end := c.g.copyIn(c.g.reduc, r, start, tokens*perToken, per, sim.Time(rounds)*c.g.kern.reduceToken)
	if end == start {
		end++ // a rank with no tokens is ready just after the sync
	}
	var bd Breakdown
	if c.maxDetect[r] >= c.sendDone[r] {
		op := transport.Op{Atomic: true, Bytes: 8}
		bd = attribute(c.cfg.Background.origin(), c.gateT[r], c.gateLocal[r], c.g.nic.floor(op, c.gateT[r].NVLink), c.maxDetect[r], start, end, CauseReduce)
	} else {
		bd = attribute(c.cfg.Background.origin(), c.selfPath(r), true, nicShare{}, 0, start, end, CauseReduce)
	}
	c.rankReady(r, end, bd)
}

// runLL runs both LL phases and the checks.
func runLL(cfg *LayerConfig, res *Result) error {
	s := cfg.Routing.Shape
	if s.TopK > warpsPerSM {
		return field.Errorf("topk", "%d exceeds the %d warps an LL kernel block posts from", s.TopK, warpsPerSM)
	}
	l := cfg.Routing.LL()
	blocks := l.Blocks() // read by both phases, so built before either starts
	g := newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU)
	res.NumSMs = llLaunch(s, cfg.NumSMs, g.costs.SMs).S
	// Dispatch and combine are simulated from their own start, each on its
	// own engine, so they run side by side on two cores, or in turn when
	// memory is short; each is deterministic, and so is the result.
	// Combine's checks take the core dispatch leaves (see combineCheck).
	free := make(chan struct{})
	var (
		probs, probs2 problemList
		r1, r2        transport.Resources
		err1, err     error
	)
	dispatch := func() error {
		var check *DispatchCheck
		r1, check, err1 = runLLDispatch(cfg, l, blocks, g, &probs, &res.Dispatch)
		if err1 == nil {
			// A failed dispatch left slots unfilled; what it delivered is
			// still checked.
			probs.addErr(check.err(res.Dispatch.Failure == nil))
		}
		return err1
	}
	combine := func() {
		g2 := newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU)
		r2, err = runLLCombine(cfg, l, blocks, g2, &probs2, &res.Combine, free)
	}
	bothPhases(cfg.InTurn, free, dispatch, combine)
	if err1 != nil {
		return err1
	}
	if err != nil {
		return err
	}
	probs.merge(&probs2)
	res.Events = res.Dispatch.Events + res.Combine.Events
	res.Resources = Resources{Resources: r1.Max(r2), BufferBytesPerRank: LLBufferBytes(s)}
	res.Problems, res.ProblemCount = probs.out(), probs.n
	return nil
}
