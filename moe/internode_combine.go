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
	subs   slots[cSub]
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
	fgGate []critPath // per stream: the credit it last waited for
	// chunks: their tail seen at the source
	cDetect []sim.Time
	// receivers rc = s·C + ch
	arrived []int32 // per stream: entries whose chunk's tail was seen
	rPos    []int32 // per rc: next token offset in the channel
	rIdx    []int32 // per rc: tokens reduced (warp rotation)
	rFill   []int32 // per stream: entries reduced at the source
	rFree   []sim.Time
	rWP     []critPath // per receiver warp: the path to its last reduction
	out     [][]float64
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
	for i := range c.fgGate {
		c.fgGate[i] = c.root()
	}
	for i := range plan.sMask {
		c.cnt[i] = int32(plan.sMask[i].count())
	}
	c.fgPos = make([]int32, nst)
	c.fgFree = make([]sim.Time, nst*c.wf)
	c.fgWP = make([]critPath, nst*c.wf)
	c.cDetect = make([]sim.Time, nch)
	c.arrived = make([]int32, nst)
	c.rPos = make([]int32, R*C)
	c.rIdx = make([]int32, R*C)
	c.rFill = make([]int32, nst)
	c.rFree = make([]sim.Time, R*C*c.wr)
	c.rWP = make([]critPath, R*C*c.wr)
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
	c.h0 = nst
	c.sms = make([]hw.SM, R*C*2)
	c.pool.init(c.h0 + R*C)
	resume := c.resume
	for st := range nst {
		src, ch, dn := plan.streamSrc(st)
		f := dn*G + src%G
		c.newTransportWarp(c.p0+st, f, (f*C+ch)*2+1, resume)
	}
	for rc := range R * C {
		c.newTransportWarp(c.h0+rc, rc/C, rc*2, resume)
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
		c.chunkReady(e, int(arg))
	case opCoordNext:
		c.postNext(e, int(arg))
	case opTailSeen:
		ci := int(arg)
		c.cDetect[ci] = e.Now()
		c.tailObserved(e, ci)
		st, _, hi := c.ck.bounds(c.plan, ci)
		c.arrived[st] = max(c.arrived[st], int32(hi))
		src, ch, _ := c.plan.streamSrc(st)
		c.recvAdvance(e, src*c.plan.C+ch)
	case opHeadSeen:
		hv := c.takeHead(arg)
		if st := int(hv.st); c.headSeen(hv) {
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
		k := c.subs.put(cSub{st: int32(st), lo: int32(lo), hi: int32(pos), j: int32(lj), vis: vis, local: f == j})
		e.At(c.g.pollDetect(vis), c.id, opNVLSeen, int64(k))
		e.At(done, c.id, opNVLStep, int64(sw))
		return
	}
}

// contribution adds a batch's tokens to their entries at the forwarder.
func (c *nodeCombine) contribution(e *sim.Engine, k int) {
	sub := c.subs.take(int32(k))
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
			c.wait[st] = true
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
		path = warpPath(path, c.fgWP[w]) // the warp may still reduce earlier tokens
		path.step(CauseSync, start)
		path.step(CauseReduce, end)
		c.fgWP[w] = path
		c.fgPos[st]++
		c.filled(e, st, pos, end, path)
	}
}

func (c *nodeCombine) resume(e *sim.Engine, w *transport.Warp) {
	i := int(w.ID)
	c.noteIssue(w, c.pool.a[i].st.start)
	if i >= c.h0 {
		c.headNext(e, i-c.h0)
		return
	}
	c.postResume(e, w, i-c.p0)
}

func (c *nodeCombine) delivered(e *sim.Engine, dl transport.Delivery) {
	if !c.accept(dl) {
		return
	}
	c.nodeBase.delivered(e, dl, c.g.pollDetect(dl.Times.Visible))
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
		path := warpPath(c.cPath[gate], c.rWP[w])
		path.step(CauseSync, start)
		path.step(CauseReduce, end)
		c.rWP[w] = path
		for _, dn := range nodes {
			st := p.stream(s, ch, int(dn))
			x := int(p.sOff[st]) + int(c.rFill[st])
			c.out[s][t] += c.acc[x]
			c.rFill[st]++
			c.returnCredit(e, st, int(c.rFill[st]), path)
		}
		c.doneRecv(s, 1, end, path)
	}
}
