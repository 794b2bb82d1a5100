package moe

import (
	"fmt"

	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// Normal (high-throughput) mode on one node, after DeepEP's intranode
// kernels, as one hop per destination rank (the transport takes same-node
// peers over NVLink when Env.NVLink is set); across nodes see
// layer_internode.go:
//
// Dispatch. A notify step first: every rank writes its counts to every
// peer; each rank's host waits until its counts arrived (the moe_recv
// counter is GPU-written host memory), then launches the dispatch kernel.
// Tokens split into C = num_sms/2 channels by index; for each channel and
// destination rank the token's row goes once (dedup by rank, NormalLayout)
// in chunks of Chunk tokens: the sender warp stages the chunk in its send
// buffer, writes it, then bumps the receiver's tail with an atomic on the
// channel's queue. Sender warps rotate over destinations to spread incast.
// The receiver's channel warps copy each chunk into recv_x once its tail
// is visible.
//
// Combine reverses every chunk: the rank that received tokens sends each
// back once (hidden BF16), the source reduces the contributions as their
// tails arrive.

// hostLaunch is the host's turn-around in the notify step: allocating the
// receive tensors and launching the dispatch kernel after its busy-wait
// saw the counts (model assumption; DeepEP issue #261 discusses the
// notify/CPU sync as a visible share of serving time).
const hostLaunch = 5 * sim.Microsecond

// normalSenders is sender warps per channel (DeepEP's RDMA sender warps
// per channel SM number 7-8 depending on version).
const normalSenders = 8

// nvlWarps is the warps of one of DeepEP's intranode channel SMs (768
// threads), split evenly over the peers on both sides.
const nvlWarps = 24

// tagPiece carries, above a chunk's index, which share of the chunk a
// data write holds (1 + its warp in the group; 0: the whole chunk).
const tagPiece = 40

// nChunk is one chunked transfer of normal mode.
type nChunk struct {
	src, dst, ch int32
	first, n     int32 // tokens tokList[first:first+n] of src
}

type normalPlan struct {
	C      int
	chunk  int
	tokens []int32 // token indices, grouped by (src, dst, channel)
	chunks []nChunk
	rankP  []int32 // RankList positions, parallel to tokens
}

func planNormal(r *Routing, n *NormalLayout, C, chunk int) *normalPlan {
	s := r.Shape
	R := s.Ranks
	key := func(src, dst, ch int) int { return (src*R+dst)*C + ch }
	cnt := make([]int32, R*R*C+1)
	for src := range R {
		T := r.Tokens[src]
		for t := range T {
			ch := t * C / max(1, T)
			for _, dst := range n.RanksOf(src, t) {
				cnt[key(src, int(dst), ch)+1]++
			}
		}
	}
	for i := 1; i < len(cnt); i++ {
		cnt[i] += cnt[i-1]
	}
	p := &normalPlan{C: C, chunk: chunk, tokens: make([]int32, cnt[len(cnt)-1]), rankP: make([]int32, cnt[len(cnt)-1])}
	fill := append([]int32(nil), cnt...)
	for src := range R {
		T := r.Tokens[src]
		for t := range T {
			ch := t * C / max(1, T)
			g := n.TokenStart[src] + t
			for j, dst := range n.RanksOf(src, t) {
				k := key(src, int(dst), ch)
				p.tokens[fill[k]] = int32(t)
				p.rankP[fill[k]] = int32(n.RankStart[g] + j)
				fill[k]++
			}
		}
	}
	for src := range R {
		for dst := range R {
			for ch := range C {
				k := key(src, dst, ch)
				for f := cnt[k]; f < cnt[k+1]; f += int32(chunk) {
					p.chunks = append(p.chunks, nChunk{src: int32(src), dst: int32(dst), ch: int32(ch), first: f, n: min(int32(chunk), cnt[k+1]-f)})
				}
			}
		}
	}
	return p
}

// normalPhase runs one direction of normal mode.
type normalPhase struct {
	llBase
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

func runNormalPhase(cfg *LayerConfig, n *NormalLayout, plan *normalPlan, g *gpuModel, probs *problemList, ph *Phase, combine bool, notify []sim.Time) (transport.Resources, error) {
	p := &normalPhase{plan: plan, combine: combine}
	p.ph = p
	p.cfg, p.s, p.g, p.probs, p.phase = cfg, n.Shape, g, probs, ph
	s := n.Shape
	p.ls = llShape{S: normalSMsOr(cfg.NumSMs), G: 1, wpg: warpsPerSM}
	p.nl, p.R, p.E = s.LocalExperts(), s.Ranks, s.Physical()
	R, C := p.R, plan.C
	p.issueDone = make([]sim.Time, R)
	p.lastStart = make([]sim.Time, R)
	p.sendDone = make([]sim.Time, R)
	p.sendLeft = make([]int32, R)
	p.readyLeft = R
	ph.Ranks = make([]RankTiming, R)
	p.bytesTok = s.NormalTokenBytes()
	if combine {
		p.bytesTok = s.Hidden * s.Combine.Bytes()
	}
	e, conn, err := openPhaseOn(cfg, ph, p.delivered, nil, g.mem)
	if err != nil {
		return transport.Resources{}, err
	}
	p.e, p.conn = e, conn
	p.id = e.Register(p)
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
	p.bg = newBackground(e, cfg.Background, conn, g, R, C)
	p.notify = notify
	for r := range R {
		st := cfg.Background.origin()
		if notify != nil {
			st += notify[r]
		}
		p.start[r] = st
		e.At(st, p.id, opStartKernel, int64(r))
	}
	if err := p.run(); err != nil {
		return transport.Resources{}, err
	}
	// Algorithm bytes: DeepEP counts every selection's token bytes.
	per := make([]int64, R)
	for r := range R {
		sel := 0
		for _, x := range cfg.Routing.Idx[r] {
			if x >= 0 {
				sel++
			}
		}
		per[r] = int64(sel) * int64(p.bytesTok)
	}
	ph.finish(per, cfg.Background.origin())
	// A failed phase left tokens undelivered: only duplicates are
	// problems then.
	whole := ph.Failure == nil
	for i, c := range p.seenTok {
		if c > 1 || (c == 0 && whole) {
			what := "never arrived"
			if c > 1 {
				what = fmt.Sprintf("arrived %d times", c)
			}
			probs.add("normal %s: token-to-rank pair %d %s", phaseName(combine), i, what)
		}
	}
	if combine && whole {
		for r := range R {
			probs.addErr(cfg.Routing.CheckCombine(r, p.out[r]))
		}
	} else if !combine && whole && !cfg.NoPayload {
		want := make([]uint64, R)
		for src := range R {
			for t := range cfg.Routing.Tokens[src] {
				for _, dst := range n.RanksOf(src, t) {
					want[dst] += Payload(src, t)
				}
			}
		}
		for r := range R {
			if want[r] != p.sumGot[r] {
				probs.add("normal dispatch payload checksum: rank %d received %016x, want %016x", r, p.sumGot[r], want[r])
			}
		}
	}
	return conn.Resources(), nil
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
		dl := p.locals[arg]
		p.freeL = append(p.freeL, int32(arg))
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

// partial is rank's contribution to token t of src in normal combine: its
// experts' outputs weighted by the token's top-k weights.
func partial(r *Routing, src, t, rank int) float64 {
	s := r.Shape
	k := s.TopK
	nl := s.LocalExperts()
	var sum float64
	for j := range k {
		ex := r.Idx[src][t*k+j]
		if ex < 0 || int(ex)/nl != rank {
			continue
		}
		sum += float64(r.Weights[src][t*k+j]) * ExpertOutput(src, t, s.LogicalOf(int(ex)))
	}
	return sum
}

// runNotify models the notify step: every rank writes its counts to every
// peer from one warp per channel, the receiving host sees them, then
// launches the dispatch kernel. It returns each rank's launch time.
func runNotify(cfg *LayerConfig, ph *Phase, g *gpuModel, C int) ([]sim.Time, transport.Resources, int64, error) {
	s := cfg.Routing.Shape
	R := s.Ranks
	last := make([]sim.Time, R)
	left := make([]int, R)
	for r := range left {
		left[r] = R - 1
	}
	e, conn, err := openPhaseOn(cfg, ph, func(_ *sim.Engine, d transport.Delivery) {
		last[d.Op.Dst] = max(last[d.Op.Dst], d.Times.Visible)
		left[d.Op.Dst]--
	}, nil, g.mem)
	if err != nil {
		return nil, transport.Resources{}, 0, err
	}
	bytes := 4 * (1 + s.LocalExperts()) // tokens for the rank + per expert
	sms := make([]hw.SM, R)
	warps := make([]transport.Warp, R*C)
	next := make([]int, R*C)
	var id sim.HandlerID
	var msgs int64
	resume := func(e *sim.Engine, w *transport.Warp) { e.At(max(w.T.T, e.Now()), id, 0, int64(w.ID)) }
	id = e.Register(sim.HandlerFunc(func(e *sim.Engine, _ int32, arg int64) {
		w := &warps[arg]
		ch := int(arg) % C
		// Channel warp ch writes to peers ch+1, ch+1+C, ... after itself.
		off := 1 + ch + next[arg]*C
		if off >= R {
			return
		}
		next[arg]++
		msgs++
		conn.Post(e, w, transport.Op{Src: int(w.Rank), Dst: (int(w.Rank) + off) % R, Channel: ch, Bytes: bytes, Flush: true})
	}))
	for i := range warps {
		r := i / C
		sms[r].Lanes = C
		warps[i] = transport.Warp{Rank: int32(r), ID: int32(i), T: hw.NewThread(g.costsOf(r), &sms[r]), Resume: resume}
		e.At(0, id, 0, int64(i))
	}
	e.Run()
	if ph.notifyFailed(R) {
		return nil, conn.Resources(), msgs, nil
	}
	out := make([]sim.Time, R)
	hostSee := sim.Ns(cfg.Profile.Get("pcie.dma_write_ns"))
	for r := range R {
		if left[r] != 0 {
			return nil, transport.Resources{}, 0, fmt.Errorf("transport %s: notify step lost %d messages to rank %d", cfg.Transport.Name(), left[r], r)
		}
		out[r] = g.pollDetect(last[r]) + hostSee + hostLaunch
	}
	return out, conn.Resources(), msgs, nil
}

// NormalBufferBytes approximates DeepEP's normal-mode buffers per rank:
// the RDMA buffer (send and receive rings of num_max_rdma_chunked_recv
// tokens per channel and NVLink domain) and the NVLink buffer
// (num_max_nvl_chunked recv tokens per channel and peer in the domain),
// with its default 128/288.
func NormalBufferBytes(s Shape, channels int) int64 {
	tb := int64(s.NormalTokenBytes())
	rdma := 2 * int64(channels) * int64(s.Domains()) * 128 * tb
	nvl := int64(channels) * int64(s.DomainGPUs()) * 288 * tb
	return rdma + nvl
}

func runNormal(cfg *LayerConfig, res *Result) error {
	s := cfg.Routing.Shape
	if s.Domains() > 1 {
		return runNodes(cfg, res)
	}
	chunk := cfg.Chunk
	if chunk == 0 {
		chunk = defaultChunk
	}
	C, _ := Channels(s, Normal, cfg.NumSMs, Background{})
	res.NumSMs = normalSMsOr(cfg.NumSMs)
	n := cfg.Routing.Normal()
	plan := planNormal(cfg.Routing, n, C, chunk)
	var probs problemList
	g := newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU)
	notify, r0, nmsgs, err := runNotify(cfg, &res.Dispatch, g, C)
	if err != nil {
		return err
	}
	r1, r2, err := runPhases(cfg.InTurn, &probs, func(pl *problemList) (transport.Resources, error) {
		if notify == nil {
			return r0, nil // the notify step failed: dispatch never launched
		}
		return runNormalPhase(cfg, n, plan, newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU), pl, &res.Dispatch, false, notify)
	}, func(pl *problemList) (transport.Resources, error) {
		return runNormalPhase(cfg, n, plan, newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU), pl, &res.Combine, true, nil)
	})
	if err != nil {
		return err
	}
	res.Dispatch.Messages += nmsgs
	// DeepEP's count on one node, as test_intranode.py prints "GB/s
	// (NVL)": the tokens a rank receives, its own among them (recv_x),
	// over the kernel time after the notify step; combine sends the same
	// tokens back in BF16.
	for _, ph := range []struct {
		p       *Phase
		combine bool
	}{{&res.Dispatch, false}, {&res.Combine, true}} {
		bytes := make([]int64, s.Ranks)
		for r := range s.Ranks {
			bytes[r] = int64(n.RecvPerRank[r]) * deepepTokenBytes(s, ph.combine)
			if !ph.combine && notify != nil {
				ph.p.Ranks[r].Launch = notify[r]
			}
		}
		ph.p.deepepOver(bytes)
	}
	res.Events = res.Dispatch.Events + res.Combine.Events
	res.Resources = Resources{Resources: r0.Max(r1).Max(r2), BufferBytesPerRank: NormalBufferBytes(s, C)}
	res.Problems, res.ProblemCount = probs.out(), probs.n
	return nil
}
