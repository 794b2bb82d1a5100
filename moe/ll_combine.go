package moe

import (
	"unsafe"

	"moebench/hw"
	"moebench/internal/hugepage"
	"moebench/internal/prefetch"
	"moebench/sim"
	"moebench/transport"
)

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
	phaseRun
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
	c.init(c, cfg, l.Shape, llLaunch(l.Shape, cfg.NumSMs, g.costs.SMs), g, probs, ph)
	c.l = l
	if err := c.open(c, c.delivered, c.prefetchDelivery); err != nil {
		return transport.Resources{}, err
	}
	e, conn := c.e, c.conn
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
	err := c.run()
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
	c.phaseRun.Prefetch(op, arg, near)
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
		dl := c.locals.take(int32(arg))
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
