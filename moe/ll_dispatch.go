package moe

import (
	"unsafe"

	"moebench/hw"
	"moebench/internal/hugepage"
	"moebench/internal/prefetch"
	"moebench/sim"
	"moebench/transport"
)

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
	phaseRun
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
	check  *DispatchCheck
	sumGot []uint64
}

func runLLDispatch(cfg *LayerConfig, l *LLLayout, blocks LLBlocks, g *gpuModel, probs *problemList, ph *Phase) (transport.Resources, *DispatchCheck, error) {
	d := &llDispatch{}
	d.init(d, cfg, l.Shape, llLaunch(l.Shape, cfg.NumSMs, g.costs.SMs), g, probs, ph)
	d.l = l
	if err := d.open(d, d.delivered, d.prefetchDelivery); err != nil {
		return transport.Resources{}, nil, err
	}
	if err := checkDepth(d.s, cfg.Transport.QueueDepth()); err != nil {
		return transport.Resources{}, nil, err
	}
	e, conn := d.e, d.conn
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
		dl := d.locals.take(int32(arg))
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
		d.phaseRun.Prefetch(op, arg, near)
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
