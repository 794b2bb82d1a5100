package moe

import (
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// normalSenders is sender warps per channel (DeepEP's RDMA sender warps
// per channel SM number 7-8 depending on version).
const normalSenders = 8

// nvlWarps is the warps of one of DeepEP's intranode channel SMs (768
// threads), split evenly over the peers on both sides.
const nvlWarps = 24

// tagPiece carries, above a chunk's index, which share of the chunk a
// data write holds (1 + its warp in the group; 0: the whole chunk).
const tagPiece = 40

// normalPhase runs one direction of normal mode.
type normalPhase struct {
	phaseRun
	plan     *normalPlan
	combine  bool
	bytesTok int
	start    []sim.Time // per rank: its kernel launched
	notify   []sim.Time
	// sender warps: each walks its list of chunks
	wlist  []int32 // chunk indices, grouped by warp
	woff   []int32
	wpos   []int32
	wtail  []bool // the warp's next post is the tail of its current chunk
	chFree []sim.Time
	// Over NVLink, DeepEP's intranode layout instead: per (sender,
	// channel, peer) a group of perDst warps; each chunk's tokens are
	// split over them, they meet, one publishes the tail, then the next
	// chunk. wlist/woff/wpos then index groups.
	W        int // sender warps per (rank, channel)
	perDst   int
	gPending []int32        // pieces of the current chunk still being written
	gBar     []sim.Time     // the latest piece's end: the group's barrier
	pieces   []int16        // per chunk: pieces delivered
	ops      []transport.Op // per warp: the op it is posting
	// receive
	dataSeen  []bool
	tailSeen  []bool
	left      []int32
	ready     []sim.Time
	gateT     []transport.Times
	gateLocal []bool
	gateDet   []sim.Time
	gateStart []sim.Time
	seenTok   []uint8
	out       [][]float64
	sumGot    []uint64
	tails     map[int]tailInfo // tail times from delivery until received
}

const opStartKernel int32 = 50

// newNormalPhase builds one direction of normal mode on one node, its
// kernels launched after notify (nil: at once).
func newNormalPhase(cfg *LayerConfig, n *NormalLayout, plan *normalPlan, g *gpuModel, probs *problemList, ph *Phase, combine bool, notify []sim.Time) (*normalPhase, error) {
	p := &normalPhase{plan: plan, combine: combine}
	s := n.Shape
	p.init(p, cfg, s, normalLaunch(cfg.NumSMs), g, probs, ph)
	R, C := p.R, plan.C
	p.bytesTok = s.NormalTokenBytes()
	if combine {
		p.bytesTok = s.Hidden * s.Combine.Bytes()
	}
	if err := p.open(p, p.delivered, nil); err != nil {
		return nil, err
	}
	if cfg.NVLink && carriesNVLink(cfg.Transport) {
		p.nvlSenders()
	} else {
		p.warpSenders()
	}
	p.start = make([]sim.Time, R)
	// Receivers: one per (rank, channel), or over NVLink, DeepEP's warp
	// group per (rank, channel, source).
	if p.perDst > 0 {
		p.chFree = make([]sim.Time, R*C*R)
	} else {
		p.chFree = make([]sim.Time, R*C)
	}
	p.pieces = make([]int16, len(plan.chunks))
	p.dataSeen = make([]bool, len(plan.chunks))
	p.tailSeen = make([]bool, len(plan.chunks))
	p.left = make([]int32, R)
	for _, c := range plan.chunks {
		rcv := c.dst
		if combine {
			rcv = c.src
		}
		p.left[rcv]++
	}
	p.ready = make([]sim.Time, R)
	p.gateT = make([]transport.Times, R)
	p.gateLocal = make([]bool, R)
	p.gateDet = make([]sim.Time, R)
	p.gateStart = make([]sim.Time, R)
	p.seenTok = make([]uint8, len(n.RankList))
	p.sumGot = make([]uint64, R)
	if combine {
		p.out = make([][]float64, R)
		for r := range R {
			p.out[r] = make([]float64, cfg.Routing.Tokens[r])
		}
	}
	p.bg = newBackground(p.e, cfg.Background, p.conn, g, R, C)
	p.notify = notify
	for r := range R {
		st := cfg.Background.origin()
		if notify != nil {
			st += notify[r]
		}
		p.start[r] = st
		p.e.At(st, p.id, opStartKernel, int64(r))
	}
	return p, nil
}

// runNormalPhase simulates one direction of normal mode on one node and
// checks that every token-to-rank pair arrived once; each direction checks
// what it delivered (runNormalDispatch, runNormalCombine).
func runNormalPhase(cfg *LayerConfig, n *NormalLayout, plan *normalPlan, g *gpuModel, probs *problemList, ph *Phase, combine bool, notify []sim.Time) (*normalPhase, error) {
	p, err := newNormalPhase(cfg, n, plan, g, probs, ph, combine, notify)
	if err != nil {
		return nil, err
	}
	if err := p.run(); err != nil {
		return nil, err
	}
	ph.finish(selectionBytes(cfg.Routing, int64(p.bytesTok)), cfg.Background.origin())
	checkPairs(probs, p.seenTok, ph.Failure == nil, "normal "+phaseName(combine))
	return p, nil
}

// warpSenders lays out the sender warps through a NIC: W per (rank,
// channel); warp w takes the destinations at offsets 1+w, 1+w+W, ... from
// its rank, round-robin by chunk.
func (p *normalPhase) warpSenders() {
	plan, R, C := p.plan, p.R, p.plan.C
	W := min(R, normalSenders)
	p.W = W
	nw := R * C * W
	p.woff = make([]int32, nw+1)
	perWarp := make([][]int32, nw)
	// chunks by (sender, peer, channel) in chunk order
	for i, c := range plan.chunks {
		snd, peer := p.ends(c)
		off := ((peer-snd)%R + R - 1) % R // 0 for the next rank, R-1 for itself
		w := (snd*C+int(c.ch))*W + off%W
		perWarp[w] = append(perWarp[w], int32(i))
	}
	p.wlist = make([]int32, 0, len(plan.chunks))
	for w := range nw {
		// Round-robin over the warp's destinations: stable sort by the
		// chunk's round within its (sender, peer, channel) run.
		list := perWarp[w]
		round := make(map[int32]int32, len(list))
		var prev nChunk
		var q int32
		for j, ci := range list {
			c := plan.chunks[ci]
			if j > 0 && c.src == prev.src && c.dst == prev.dst && c.ch == prev.ch {
				q++
			} else {
				q = 0
			}
			round[ci] = q
			prev = c
		}
		sortStableBy(list, func(ci int32) int32 { return round[ci] })
		p.wlist = append(p.wlist, list...)
		p.woff[w+1] = int32(len(p.wlist))
		perWarp[w] = nil
	}
	p.wpos = make([]int32, nw)
	p.wtail = make([]bool, nw)
	p.sms = make([]hw.SM, R*C)
	p.pool.init(nw)
	p.ops = make([]transport.Op, nw)
	for w := range nw {
		r := w / (C * W)
		sm := w / W
		p.sms[sm].Lanes = W
		p.newWarp(w, r, sm, p.resume)
	}
	for r := range R {
		p.sendLeft[r] = int32(C * W)
	}
}

// nvlSenders lays out DeepEP's intranode senders: per (rank, channel,
// peer) a group of perDst warps and its chunks in order.
func (p *normalPhase) nvlSenders() {
	plan, R, C := p.plan, p.R, p.plan.C
	p.perDst = max(1, nvlWarps/R)
	ng := R * C * R
	p.W = R * p.perDst
	p.woff = make([]int32, ng+1)
	for _, c := range plan.chunks {
		snd, peer := p.ends(c)
		p.woff[(snd*C+int(c.ch))*R+peer+1]++
	}
	for g := range ng {
		p.woff[g+1] += p.woff[g]
	}
	fill := append([]int32(nil), p.woff[:ng]...)
	p.wlist = make([]int32, len(plan.chunks))
	for i, c := range plan.chunks {
		snd, peer := p.ends(c)
		g := (snd*C+int(c.ch))*R + peer
		p.wlist[fill[g]] = int32(i)
		fill[g]++
	}
	p.wpos = make([]int32, ng)
	p.wtail = make([]bool, ng)
	p.gPending = make([]int32, ng)
	p.gBar = make([]sim.Time, ng)
	p.sms = make([]hw.SM, R*C)
	nw := ng * p.perDst
	p.pool.init(nw)
	p.ops = make([]transport.Op, nw)
	for w := range nw {
		sm := w / p.W
		p.sms[sm].Lanes = p.W
		p.newWarp(w, sm/C, sm, p.resume)
	}
	for r := range R {
		p.sendLeft[r] = int32(C * R)
	}
}

func phaseName(combine bool) string {
	if combine {
		return "combine"
	}
	return "dispatch"
}

func sortStableBy(v []int32, key func(int32) int32) {
	// insertion-free stable counting by key
	if len(v) < 2 {
		return
	}
	maxK := int32(0)
	for _, x := range v {
		maxK = max(maxK, key(x))
	}
	buckets := make([][]int32, maxK+1)
	for _, x := range v {
		k := key(x)
		buckets[k] = append(buckets[k], x)
	}
	v = v[:0]
	for _, b := range buckets {
		v = append(v, b...)
	}
}

func (p *normalPhase) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case opStartKernel:
		r := int(arg)
		if p.perDst > 0 {
			for g := r * p.plan.C * p.R; g < (r+1)*p.plan.C*p.R; g++ {
				p.nextChunk(e, g, e.Now())
			}
			return
		}
		W := p.W
		for w := r * p.plan.C * W; w < (r+1)*p.plan.C*W; w++ {
			p.pool.a[w].w.T.T = e.Now()
			p.next(e, w)
		}
	case opPost:
		p.post(e, int(arg))
	case opLocal:
		dl := p.locals.take(int32(arg))
		p.delivered(e, dl)
	case opTaskReady:
		p.receive(e, int(arg))
	}
}

// op is the op warp i is posting.
func (p *normalPhase) op(i int) transport.Op { return p.ops[i] }

// next posts warp w's next chunk (or its tail), or retires the warp.
func (p *normalPhase) next(e *sim.Engine, w int) {
	wr := &p.pool.a[w].w
	pos := p.woff[w] + p.wpos[w]
	if pos >= p.woff[w+1] {
		p.retire(int(wr.Rank))
		return
	}
	ci := p.wlist[pos]
	c := p.plan.chunks[ci]
	snd, peer := p.ends(c)
	if p.wtail[w] {
		p.ops[w] = ctlOp(int(wr.Rank), peer, int(c.ch), tagCount|int64(ci))
	} else {
		bytes := int(c.n) * p.bytesTok
		// The chunk is staged in the registered send buffer first.
		p.ops[w] = dataOp(int(wr.Rank), peer, int(c.ch), bytes, int64(ci))
		if snd != peer {
			wr.T.T = p.g.copy(snd, max(wr.T.T, e.Now()), int64(bytes), int64(bytes))
		}
	}
	e.At(max(wr.T.T, e.Now()), p.id, opPost, int64(w))
}

// retire counts one of rank r's senders done.
func (p *normalPhase) retire(r int) {
	p.sendLeft[r]--
	if p.sendLeft[r] == 0 {
		p.sendDone[r] = p.issueDone[r]
	}
}

// ends are a chunk's sender and receiver in this phase (combine runs the
// plan backwards).
func (p *normalPhase) ends(c nChunk) (snd, peer int) {
	if p.combine {
		return int(c.dst), int(c.src)
	}
	return int(c.src), int(c.dst)
}

// nextChunk starts group g's next chunk at t: its tokens split over the
// group's warps, each writing its share straight into the peer's buffer;
// or it retires the group.
func (p *normalPhase) nextChunk(e *sim.Engine, g int, t sim.Time) {
	pos := p.woff[g] + p.wpos[g]
	if pos >= p.woff[g+1] {
		p.retire(g / (p.plan.C * p.R))
		return
	}
	ci := p.wlist[pos]
	c := p.plan.chunks[ci]
	_, peer := p.ends(c)
	k, per := p.split(c)
	p.gPending[g] = int32(k)
	p.gBar[g] = t
	for i := range k {
		w := g*p.perDst + i
		wr := &p.pool.a[w].w
		n := min(per, int(c.n)-i*per)
		p.ops[w] = dataOp(int(wr.Rank), peer, int(c.ch), n*p.bytesTok, int64(ci)|int64(i+1)<<tagPiece)
		wr.T.T = max(wr.T.T, t)
		e.At(max(wr.T.T, e.Now()), p.id, opPost, int64(w))
	}
}

// split is how a chunk's tokens spread over a group: k warps, per tokens
// each (the last may hold fewer).
func (p *normalPhase) split(c nChunk) (k, per int) {
	k = min(int(c.n), p.perDst)
	per = (int(c.n) + k - 1) / k
	return (int(c.n) + per - 1) / per, per
}

// groupResume: a share written (the last one meets the others and posts
// the tail), or the tail posted (the next chunk).
func (p *normalPhase) groupResume(e *sim.Engine, w *transport.Warp) {
	ws := &p.pool.a[w.ID].st
	p.noteIssue(w, ws.start)
	g := int(w.ID) / p.perDst
	if p.wtail[g] {
		p.wtail[g] = false
		p.wpos[g]++
		p.nextChunk(e, g, w.T.T)
		return
	}
	p.gBar[g] = max(p.gBar[g], w.T.T)
	p.gPending[g]--
	if p.gPending[g] > 0 {
		return
	}
	ci := p.wlist[p.woff[g]+p.wpos[g]]
	c := p.plan.chunks[ci]
	_, peer := p.ends(c)
	lead := g * p.perDst
	wr := &p.pool.a[lead].w
	wr.T.T = max(wr.T.T, p.gBar[g]) + p.g.on(int(wr.Rank), p.g.kern.nvlChunk)
	p.ops[lead] = ctlOp(int(wr.Rank), peer, int(c.ch), tagCount|int64(ci))
	p.wtail[g] = true
	e.At(max(wr.T.T, e.Now()), p.id, opPost, int64(lead))
}

func (p *normalPhase) resume(e *sim.Engine, w *transport.Warp) {
	if p.perDst > 0 {
		p.groupResume(e, w)
		return
	}
	ws := &p.pool.a[w.ID].st
	p.noteIssue(w, ws.start)
	if p.wtail[w.ID] {
		p.wpos[w.ID]++
	}
	p.wtail[w.ID] = !p.wtail[w.ID]
	p.next(e, int(w.ID))
}

func (p *normalPhase) delivered(e *sim.Engine, dl transport.Delivery) {
	if !p.accept(dl) {
		return
	}
	tag, dst := dl.Op.Tag, dl.Op.Dst
	if tag&tagCount != 0 {
		ci := int(tag &^ tagCount)
		if !p.dataSeen[ci] {
			p.probs.add("normal %s: chunk %d's tail arrived before its data", phaseName(p.combine), ci)
		}
		p.tailSeen[ci] = true
		det := p.g.pollDetect(dl.Times.Visible)
		p.pendingTimes(ci, dl.Times, dl.Op.Src == dst)
		e.At(det, p.id, opTaskReady, int64(ci))
		return
	}
	ci := int(tag & (1<<tagPiece - 1))
	c := p.plan.chunks[ci]
	first, last := c.first, c.first+c.n
	if piece := int(tag >> tagPiece); piece > 0 {
		k, per := p.split(c)
		first += int32((piece - 1) * per)
		last = min(last, first+int32(per))
		p.pieces[ci]++
		p.dataSeen[ci] = int(p.pieces[ci]) == k
	} else {
		p.dataSeen[ci] = true
	}
	for j := first; j < last; j++ {
		p.seenTok[p.plan.rankP[j]]++
		t := int(p.plan.tokens[j])
		if p.combine {
			src := int(c.src)
			p.out[src][t] += partial(p.cfg.Routing, src, t, int(c.dst))
		} else if !p.cfg.NoPayload {
			p.sumGot[dst] += Payload(int(c.src), t)
		}
	}
}

// tailTimes holds a chunk's tail times from delivery until it is received.
func (p *normalPhase) pendingTimes(ci int, t transport.Times, local bool) {
	if p.tails == nil {
		p.tails = map[int]tailInfo{}
	}
	p.tails[ci] = tailInfo{t, local}
}

type tailInfo struct {
	t     transport.Times
	local bool
}

// receive copies (dispatch) or reduces (combine) chunk ci once its tail
// was observed and the receiving kernel runs.
func (p *normalPhase) receive(e *sim.Engine, ci int) {
	c := p.plan.chunks[ci]
	snd, rcv := p.ends(c)
	ti := p.tails[ci]
	delete(p.tails, ci)
	det := e.Now()
	bytes := int64(c.n) * int64(p.bytesTok)
	work := CauseCopy
	if p.combine {
		work = CauseReduce
	}
	// One receiver per (rank, channel), its chunk's tokens over up to 16
	// warps; over NVLink one per (rank, channel, source), over its warps.
	x := rcv*p.plan.C + int(c.ch)
	var start, end sim.Time
	if p.perDst > 0 {
		x = x*p.R + snd
		start = max(det, p.start[rcv], p.chFree[x])
		own := start + p.g.on(rcv, p.g.kern.nvlRecvChunk+bytesTime(bytes/int64(min(int(c.n), p.perDst)), p.g.kern.nvlWarpBpp))
		end = max(own, p.g.mem.Take(rcv, start, p.g.bytesOn(rcv, bytes)))
	} else {
		start = max(det, p.start[rcv], p.chFree[x])
		end = p.g.copy(rcv, start, bytes, bytes/int64(min(int(c.n), warpsPerSM/2)))
	}
	p.chFree[x] = end
	if end > p.ready[rcv] {
		p.ready[rcv] = end
		p.gateT[rcv], p.gateLocal[rcv], p.gateDet[rcv], p.gateStart[rcv] = ti.t, ti.local, det, start
	}
	p.left[rcv]--
	if p.left[rcv] == 0 {
		p.finishRank(rcv, work)
	}
}

func (p *normalPhase) finishRank(r int, work Cause) {
	var bd Breakdown
	if p.ready[r] == 0 {
		// Nothing to receive: ready when the kernel started.
		p.ready[r] = p.start[r] + 1
		bd = attribute(p.cfg.Background.origin(), transport.Times{}, true, nicShare{}, 0, p.start[r], p.ready[r], work)
	} else {
		op := transport.Op{Atomic: true, Bytes: 8}
		bd = attribute(p.cfg.Background.origin(), p.gateT[r], p.gateLocal[r], p.g.nic.floor(op, p.gateT[r].NVLink), p.gateDet[r], p.gateStart[r], p.ready[r], work)
	}
	p.rankReady(r, p.ready[r], bd)
}
