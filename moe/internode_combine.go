package moe

import (
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// cSub is one combine NVLink batch: the entries [lo, hi) of stream st
// bound back from local rank j, sent to the stream's forwarder.
type cSub struct {
	st, lo, hi, j int32
	vis           sim.Time // visible at the forwarder
	local         bool
}

type nodeCombine struct {
	nodeBase
	wf, wr int // forwarder warps per source node, receiver warps per channel
	// NVLink senders sw = (j·C + ch)·G + l
	nsNext []int32    // round-robin source node
	nsPos  []int32    // [sw·N + sn]: next entry of that source's stream
	nsFree []sim.Time // per sw
	subs   []cSub
	freeS  []int32
	// per entry
	cnt     []int32
	acc     []float64
	reduced []bool
	// the last local part's batch: visible and seen at the forwarder
	entVis, entDet []sim.Time
	entLocal       []bool
	// forwarder groups, one per stream
	fgPos  []int32
	fgFree []sim.Time // [st·wf + w]
	fgWP   []critPath // [st·wf + w]: the path to the warp's last reduction
	sReady []sim.Time
	head   []int32
	waitFg []bool
	fgGate []critPath // per stream: the credit it last waited for
	sPath  []critPath // per stream: the latest reduced token's path
	cPath  []critPath // per chunk
	pq     [][]int32  // ready chunks to post
	pBusy  []bool
	pTail  []bool
	pCur   []int32
	// chunks
	cTimes   []transport.Times
	cLocal   []bool
	cDetect  []sim.Time
	dataSeen []bool
	tailSeen []bool
	// receivers rc = s·C + ch
	arrived  []int32 // per stream: entries whose chunk's tail was seen
	rPos     []int32 // per rc: next token offset in the channel
	rIdx     []int32 // per rc: tokens reduced (warp rotation)
	rFill    []int32 // per stream: entries reduced at the source
	rFree    []sim.Time
	rWP      []critPath // per receiver warp: the path to its last reduction
	headSent []int32
	hq       [][]int64 // per rc
	hBusy    []bool
	out      [][]float64
	p0, q0   int // pool: stream posters, then receiver coordinators
}

func runNodeCombine(cfg *LayerConfig, n *NormalLayout, plan *nodePlan, g *gpuModel, probs *problemList, ph *Phase) (transport.Resources, error) {
	c := &nodeCombine{}
	c.init(cfg, n, plan, g, probs, ph, true)
	if err := c.open(c, c.delivered, nil); err != nil {
		return transport.Resources{}, err
	}
	e, conn := c.e, c.conn
	R, C, G, N := plan.R, plan.C, plan.G, plan.N
	s := n.Shape
	c.tb = int64(s.NormalCombineTokenBytes())
	c.wf = max(1, combineForwarderWarps/N)
	c.wr = max(1, N*c.wf-G)
	nst := R * C * N
	nent := len(plan.sTok)
	nch := len(c.ck.cSt)
	c.nsNext = make([]int32, R*C*G)
	c.nsPos = make([]int32, R*C*G*N)
	c.nsFree = make([]sim.Time, R*C*G)
	c.cnt = make([]int32, nent)
	c.acc = make([]float64, nent)
	c.reduced = make([]bool, nent)
	c.entVis = make([]sim.Time, nent)
	c.entDet = make([]sim.Time, nent)
	c.entLocal = make([]bool, nent)
	c.fgGate = make([]critPath, nst)
	c.sPath = make([]critPath, nst)
	for i := range c.fgGate {
		c.fgGate[i] = c.root()
	}
	c.cPath = make([]critPath, nch)
	for i := range plan.sMask {
		c.cnt[i] = int32(plan.sMask[i].count())
	}
	c.fgPos = make([]int32, nst)
	c.fgFree = make([]sim.Time, nst*c.wf)
	c.fgWP = make([]critPath, nst*c.wf)
	c.sReady = make([]sim.Time, nst)
	c.head = make([]int32, nst)
	c.waitFg = make([]bool, nst)
	c.pq = make([][]int32, nst)
	c.pBusy = make([]bool, nst)
	c.pTail = make([]bool, nst)
	c.pCur = make([]int32, nst)
	c.cTimes = make([]transport.Times, nch)
	c.cLocal = make([]bool, nch)
	c.cDetect = make([]sim.Time, nch)
	c.dataSeen = make([]bool, nch)
	c.tailSeen = make([]bool, nch)
	c.arrived = make([]int32, nst)
	c.rPos = make([]int32, R*C)
	c.rIdx = make([]int32, R*C)
	c.rFill = make([]int32, nst)
	c.rFree = make([]sim.Time, R*C*c.wr)
	c.rWP = make([]critPath, R*C*c.wr)
	c.headSent = make([]int32, nst)
	c.hq = make([][]int64, R*C)
	c.hBusy = make([]bool, R*C)
	c.out = make([][]float64, R)
	for r := range R {
		c.out[r] = make([]float64, cfg.Routing.Tokens[r])
		for t := range cfg.Routing.Tokens[r] {
			if len(n.NodesOf(r, t)) > 0 {
				c.left[r]++
			}
		}
	}
	// Posting warps: each forwarder group's last warp writes its chunks
	// (forwarder SM); a coordinator per channel returns credit (sender SM).
	c.p0 = 0
	c.q0 = nst
	c.sms = make([]hw.SM, R*C*2)
	c.pool.init(c.q0 + R*C)
	resume := c.resume
	for st := range nst {
		src, ch, dn := plan.streamSrc(st)
		f := dn*G + src%G
		c.newTransportWarp(c.p0+st, f, (f*C+ch)*2+1, resume)
	}
	for rc := range R * C {
		c.newTransportWarp(c.q0+rc, rc/C, rc*2, resume)
	}
	c.bg = newBackground(e, cfg.Background, conn, g, R, 2*C)
	for r := range R {
		c.start[r] = cfg.Background.origin() + g.on(r, g.kern.start)
		e.At(c.start[r], c.id, opNodeStart, int64(r))
	}
	if err := c.run(); err != nil {
		return transport.Resources{}, err
	}
	c.finishNodes(selectionBytes(cfg.Routing, int64(s.Hidden*s.Combine.Bytes())), deepepTokenBytes(s, true), cfg.Background.origin())
	if ph.Failure != nil {
		// What a failed combine left unreduced is no problem of the
		// layer's checks.
		return conn.Resources(), nil
	}
	for i, k := range c.cnt {
		if k != 0 {
			probs.add("internode combine: entry %d lacks %d local contributions", i, k)
		} else if !c.reduced[i] {
			probs.add("internode combine: entry %d was never reduced at its forwarder", i)
		}
	}
	for r := range R {
		probs.addErr(cfg.Routing.CheckCombine(r, c.out[r]))
	}
	return conn.Resources(), nil
}

func (c *nodeCombine) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case opNodeStart:
		r := int(arg)
		for ch := range c.plan.C {
			for l := range c.plan.G {
				sw := (r*c.plan.C+ch)*c.plan.G + l
				c.nsFree[sw] = e.Now()
				c.nsNext[sw] = int32(ch % c.plan.N)
				c.nvlStep(e, sw)
			}
		}
		c.readyEmpty(r)
	case opNVLStep:
		c.nvlStep(e, int(arg))
	case opNVLSeen:
		c.contribution(e, int(arg))
	case opChunkReady:
		st := int(c.ck.cSt[arg])
		c.pq[st] = append(c.pq[st], int32(arg))
		if !c.pBusy[st] {
			c.postNext(e, st)
		}
	case opCoordNext:
		c.postNext(e, int(arg))
	case opTailSeen:
		ci := int(arg)
		c.cDetect[ci] = e.Now()
		c.cPath[ci].delivery(c.cTimes[ci], c.cLocal[ci], c.g.nic.floor(transport.Op{Atomic: true, Bytes: 8}, false))
		c.cPath[ci].step(CauseObserve, e.Now())
		st, _, hi := c.ck.bounds(c.plan, ci)
		c.arrived[st] = max(c.arrived[st], int32(hi))
		src, ch, _ := c.plan.streamSrc(st)
		c.recvAdvance(e, src*c.plan.C+ch)
	case opHeadSeen:
		hv := c.takeHead(arg)
		st := int(hv.st)
		c.head[st] = max(c.head[st], hv.value)
		if c.waitFg[st] {
			c.waitFg[st] = false
			c.fgGate[st] = hv.path
			c.fgAdvance(e, st)
		}
	}
}

// nvlStep has NVLink sender warp sw send its next batch back to the
// forwarder: up to nvl_chunk tokens of the next source node in turn.
func (c *nodeCombine) nvlStep(e *sim.Engine, sw int) {
	p := c.plan
	l := sw % p.G
	jc := sw / p.G
	j, ch := jc/p.C, jc%p.C
	node := j / p.G
	lj := j % p.G
	for range p.N {
		sn := int(c.nsNext[sw])
		c.nsNext[sw] = int32((sn + 1) % p.N)
		st := p.stream(sn*p.G+l, ch, node)
		base := int(p.sOff[st])
		L := p.streamLen(st)
		pos := int(c.nsPos[sw*p.N+sn])
		lo := pos
		n := 0
		for ; pos < L && n < c.cfgN.nvlChunk; pos++ {
			if p.sMask[base+pos].has(lj) {
				n++
			}
		}
		// Skip past entries not bound here so the next batch starts at one.
		for pos < L && !p.sMask[base+pos].has(lj) {
			pos++
		}
		c.nsPos[sw*p.N+sn] = int32(pos)
		if n == 0 {
			continue
		}
		f := node*p.G + l
		bytes := int64(n) * c.tb
		start := max(e.Now(), c.nsFree[sw])
		var done, vis sim.Time
		if f == j {
			done = c.warpCopy(j, start, bytes, 0)
			vis = done
		} else {
			done, vis = c.nvl.copy(j, start, bytes)
			c.phase.NVLinkBytes += bytes
		}
		c.nsFree[sw] = done
		c.work(j, done)
		k := c.newSub(cSub{st: int32(st), lo: int32(lo), hi: int32(pos), j: int32(lj), vis: vis, local: f == j})
		e.At(c.g.pollDetect(vis), c.id, opNVLSeen, int64(k))
		e.At(done, c.id, opNVLStep, int64(sw))
		return
	}
}

func (c *nodeCombine) newSub(s cSub) int32 {
	if k := len(c.freeS); k > 0 {
		i := c.freeS[k-1]
		c.freeS = c.freeS[:k-1]
		c.subs[i] = s
		return i
	}
	c.subs = append(c.subs, s)
	return int32(len(c.subs) - 1)
}

// contribution adds a batch's tokens to their entries at the forwarder.
func (c *nodeCombine) contribution(e *sim.Engine, k int) {
	sub := c.subs[k]
	c.freeS = append(c.freeS, int32(k))
	p := c.plan
	st := int(sub.st)
	src, _, dn := p.streamSrc(st)
	base := int(p.sOff[st])
	j := int(sub.j)
	rank := dn*p.G + j
	for a := int(sub.lo); a < int(sub.hi); a++ {
		x := base + a
		if !p.sMask[x].has(j) {
			continue
		}
		if c.reduced[x] {
			c.probs.add("internode combine: rank %d's part of token %d of rank %d reached the forwarder after its reduction", rank, p.sTok[x], src)
		}
		c.cnt[x]--
		c.acc[x] += partial(c.cfg.Routing, src, int(p.sTok[x]), rank)
		if e.Now() >= c.entDet[x] {
			c.entVis[x], c.entDet[x], c.entLocal[x] = sub.vis, e.Now(), sub.local
		}
	}
	c.fgAdvance(e, st)
}

// fgAdvance reduces the stream's next tokens at its forwarder once all
// their local parts arrived and the source's buffer has room.
func (c *nodeCombine) fgAdvance(e *sim.Engine, st int) {
	p := c.plan
	src, _, dn := p.streamSrc(st)
	f := dn*p.G + src%p.G
	base := int(p.sOff[st])
	L := p.streamLen(st)
	for {
		pos := int(c.fgPos[st])
		if pos >= L || c.cnt[base+pos] > 0 {
			return
		}
		if pos-int(c.head[st]) >= c.cfgN.rdmaBuf {
			c.waitFg[st] = true
			return
		}
		w := st*c.wf + pos%c.wf
		start := max(e.Now(), c.fgFree[w], c.start[f])
		m := int64(p.sMask[base+pos].count())
		end := c.warpCopy(f, start, m*c.tb, c.g.kern.reduceToken)
		c.fgFree[w] = end
		c.work(f, end)
		x := base + pos
		c.reduced[x] = true
		// Gated by its last local part, or by the credit it waited for.
		path := c.fgGate[st]
		if c.entDet[x] >= path.cur {
			// The NVLink senders stream from launch: their part is the copy.
			path = c.root()
			if c.entLocal[x] {
				path.step(CauseCopy, c.entVis[x])
			} else {
				path.step(CauseNVLink, c.entVis[x])
			}
			path.step(CauseObserve, c.entDet[x])
		}
		if c.fgWP[w].cur > path.cur {
			path = c.fgWP[w] // the warp was still reducing earlier tokens
		}
		path.step(CauseSync, start)
		path.step(CauseReduce, end)
		c.fgWP[w] = path
		if end >= c.sReady[st] {
			c.sReady[st], c.sPath[st] = end, path
		}
		c.fgPos[st]++
		if (pos+1)%c.ck.size == 0 || pos+1 == L {
			ci := int(c.ck.cOff[st]) + pos/c.ck.size
			c.cPath[ci] = c.sPath[st]
			e.At(c.sReady[st], c.id, opChunkReady, int64(ci))
		}
	}
}

// postNext writes the stream's next reduced chunk to its source: an RDMA
// write and a tail atomic, or a local tail bump on the source's own node.
func (c *nodeCombine) postNext(e *sim.Engine, st int) {
	if len(c.pq[st]) == 0 {
		c.pBusy[st] = false
		return
	}
	c.pBusy[st] = true
	ci := int(c.pq[st][0])
	c.pq[st] = c.pq[st][1:]
	c.pCur[st] = int32(ci)
	p := c.plan
	_, lo, hi := c.ck.bounds(p, ci)
	src, ch, dn := p.streamSrc(st)
	f := dn*p.G + src%p.G
	i := c.p0 + st
	if f == src {
		w := &c.pool.a[i].w
		w.T.T = max(w.T.T, e.Now())
		t0 := w.T.T
		w.T.Compute(w.T.C().FenceGPU + w.T.C().Atomic)
		c.noteIssue(w, t0)
		c.cLocal[ci], c.dataSeen[ci], c.tailSeen[ci] = true, true, true
		c.cTimes[ci] = transport.Times{IssueStart: t0, IssueEnd: w.T.T, Posted: w.T.T, Served: w.T.T, Sent: w.T.T, Arrived: w.T.T, Visible: w.T.T}
		e.At(c.g.pollDetect(w.T.T), c.id, opTailSeen, int64(ci))
		e.At(w.T.T, c.id, opCoordNext, int64(st))
		return
	}
	c.pTail[st] = false
	c.send(e, i, transport.Op{Src: f, Dst: src, Channel: ch, Bytes: (hi - lo) * int(c.tb), Tag: int64(ci)})
}

func (c *nodeCombine) resume(e *sim.Engine, w *transport.Warp) {
	i := int(w.ID)
	c.noteIssue(w, c.pool.a[i].st.start)
	if i >= c.q0 {
		c.headNext(e, i-c.q0)
		return
	}
	st := i - c.p0
	if !c.pTail[st] {
		ci := int(c.pCur[st])
		src, ch, dn := c.plan.streamSrc(st)
		c.pTail[st] = true
		c.send(e, i, transport.Op{Src: dn*c.plan.G + src%c.plan.G, Dst: src, Channel: ch, Bytes: 8, Atomic: true, Flush: true, Tag: tagCount | int64(ci)})
		return
	}
	e.At(max(w.T.T, e.Now()), c.id, opCoordNext, int64(st))
}

func (c *nodeCombine) delivered(e *sim.Engine, dl transport.Delivery) {
	if !c.accept(dl) {
		return
	}
	tag := dl.Op.Tag
	det := c.g.pollDetect(dl.Times.Visible)
	switch {
	case tag&tagHead != 0:
		c.headDelivered(tag, dl.Times, det)
		e.At(det, c.id, opHeadSeen, tag)
	case tag&tagCount != 0:
		ci := int(tag &^ tagCount)
		if !c.dataSeen[ci] {
			c.probs.add("internode combine: chunk %d's tail arrived before its data", ci)
		}
		if c.tailSeen[ci] {
			c.probs.add("internode combine: chunk %d's tail arrived twice", ci)
			return
		}
		c.tailSeen[ci] = true
		c.cTimes[ci] = dl.Times
		e.At(det, c.id, opTailSeen, int64(ci))
	default:
		ci := int(tag)
		if c.dataSeen[ci] {
			c.probs.add("internode combine: chunk %d's data arrived twice", ci)
		}
		c.dataSeen[ci] = true
	}
}

// recvAdvance has the source's receiver warps of channel rc add up each
// token's node contributions, in token order, once all arrived, and return
// credit to the forwarders.
func (c *nodeCombine) recvAdvance(e *sim.Engine, rc int) {
	p := c.plan
	s, ch := rc/p.C, rc%p.C
	lo := ch * p.per[s]
	hi := min(lo+p.per[s], c.cfg.Routing.Tokens[s])
	for {
		t := lo + int(c.rPos[rc])
		if t >= hi {
			return
		}
		nodes := c.n.NodesOf(s, t)
		gate := -1
		for _, dn := range nodes {
			st := p.stream(s, ch, int(dn))
			pos := c.rFill[st]
			if pos >= c.arrived[st] {
				return
			}
			ci := int(c.ck.cOff[st]) + int(pos)/c.ck.size
			if gate < 0 || c.cDetect[ci] > c.cDetect[gate] {
				gate = ci
			}
		}
		c.rPos[rc]++
		if len(nodes) == 0 {
			continue
		}
		w := rc*c.wr + int(c.rIdx[rc])%c.wr
		c.rIdx[rc]++
		start := max(e.Now(), c.rFree[w], c.start[s])
		k := int64(len(nodes))
		end := c.warpCopy(s, start, k*c.tb, c.g.kern.reduceToken)
		c.rFree[w] = end
		path := c.cPath[gate]
		if c.rWP[w].cur > path.cur {
			path = c.rWP[w]
		}
		path.step(CauseSync, start)
		path.step(CauseReduce, end)
		c.rWP[w] = path
		for _, dn := range nodes {
			st := p.stream(s, ch, int(dn))
			x := int(p.sOff[st]) + int(c.rFill[st])
			c.out[s][t] += c.acc[x]
			c.rFill[st]++
			c.credit(e, st, path)
		}
		c.doneRecv(s, 1, end, path)
	}
}

// credit returns rdma_chunk tokens of buffer to the stream's forwarder.
func (c *nodeCombine) credit(e *sim.Engine, st int, path critPath) {
	cons := int(c.rFill[st])
	if cons-int(c.headSent[st]) < c.cfgN.rdmaChunk {
		return
	}
	c.headSent[st] = int32(cons)
	p := c.plan
	src, ch, dn := p.streamSrc(st)
	if dn == c.s.DomainOf(src) {
		at, tag := c.headLocal(e, st, cons, path)
		e.At(at, c.id, opHeadSeen, tag)
		return
	}
	tag := c.newHead(st, cons, path)
	rc := src*p.C + ch
	c.hq[rc] = append(c.hq[rc], tag)
	if !c.hBusy[rc] {
		c.headNext(e, rc)
	}
}

func (c *nodeCombine) headNext(e *sim.Engine, rc int) {
	if len(c.hq[rc]) == 0 {
		c.hBusy[rc] = false
		return
	}
	c.hBusy[rc] = true
	tag := c.hq[rc][0]
	c.hq[rc] = c.hq[rc][1:]
	hv := c.headVals[tag&^tagHead]
	src, ch, dn := c.plan.streamSrc(int(hv.st))
	f := dn*c.plan.G + src%c.plan.G
	c.send(e, c.q0+rc, transport.Op{Src: src, Dst: f, Channel: c.plan.C + ch, Bytes: 8, Atomic: true, Flush: true, Tag: tag})
}
