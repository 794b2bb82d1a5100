package moe

import (
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// Event ops of the internode phases (beyond phaseRun's).
const (
	opNodeStart int32 = iota + 100
	opSendStep
	opChunkReady
	opTailSeen
	opMetaSeen
	opFwdDone
	opNVLSeen
	opNodeRecvDone
	opHeadSeen
	opNVLStep
	opCoordNext
)

// nvlSub is one NVLink batch: the tokens of chunk ci (entries [lo, hi) of
// its stream) bound for local rank j, as forwarded.
type nvlSub struct {
	ci, lo, hi, j int32
	n             int32
	fwdEnd        sim.Time // the forwarder warp finished the copy
	visible       sim.Time // in the target's buffer
	detect        sim.Time // the target's receiver saw its tail
	recvStart     sim.Time // the receiver began copying it out
	path          critPath // to visible in the target's buffer
}

type nodeDispatch struct {
	nodeBase
	// sender channels sc = src·C + ch
	sNext     []int32
	sFree     []sim.Time // [sc·7 + w]
	sMetaLeft []int32
	// streams
	sFill  []int32    // tokens copied into the stream's send buffer
	sReady []sim.Time // when all of them were (the in-order window)
	head   []int32    // credit returned by the forwarder
	waitSt []bool     // the stream's sender waits for credit
	// Critical paths: of the credit a channel last waited for, of each
	// stream's latest copied token, of each chunk up to its forwarding.
	chanGate []critPath
	sPath    []critPath
	cPath    []critPath
	// sender coordinators
	cq    [][]int32
	cBusy []bool
	cTail []bool
	cCur  []int32
	// chunks
	cTimes   []transport.Times
	cLocal   []bool
	dataSeen []bool
	tailSeen []bool
	cPending []int32
	cDone    []bool
	// forwarders fc = f·C + ch, their warps fw = fc·G + j
	fMetaLeft []int32
	fOpen     []bool
	fq        [][]int32
	fBusy     []bool
	fFree     []sim.Time
	fCur      []int32
	fPath     []critPath // the path to the warp's last copy
	rPath     []critPath // the path to the receiver warp's last copy
	stCons    []int32    // per stream: chunks consumed in order
	headSent  []int32
	hq        [][]int64 // per fc: head tags to post
	hBusy     []bool
	// receivers rw = (r·C + ch)·G + l
	subs  []nvlSub
	freeS []int32
	rq    [][]int32
	rBusy []bool
	rFree []sim.Time
	rCur  []int32
	// checks
	seenTok []uint8
	sumGot  []uint64
	// pool layout: sender warps, then coordinators, then head posters
	c0, h0 int
}

func runNodeDispatch(cfg *LayerConfig, n *NormalLayout, plan *nodePlan, g *gpuModel, probs *problemList, ph *Phase, notify []sim.Time) (transport.Resources, error) {
	d := &nodeDispatch{}
	d.init(cfg, n, plan, g, probs, ph, false)
	if err := d.open(d, d.delivered, nil); err != nil {
		return transport.Resources{}, err
	}
	e, conn := d.e, d.conn
	R, C, G, N := plan.R, plan.C, plan.G, plan.N
	d.tb = int64(n.Shape.NormalTokenBytes())
	nst := R * C * N
	nch := len(d.ck.cSt)
	d.sNext = make([]int32, R*C)
	d.sFree = make([]sim.Time, R*C*rdmaSenderWarps)
	d.sMetaLeft = make([]int32, R*C)
	d.sFill = make([]int32, nst)
	d.sReady = make([]sim.Time, nst)
	d.head = make([]int32, nst)
	d.waitSt = make([]bool, nst)
	d.cq = make([][]int32, R*C)
	d.cBusy = make([]bool, R*C)
	d.cTail = make([]bool, R*C)
	d.cCur = make([]int32, R*C)
	d.cTimes = make([]transport.Times, nch)
	d.cLocal = make([]bool, nch)
	d.dataSeen = make([]bool, nch)
	d.tailSeen = make([]bool, nch)
	d.cPending = make([]int32, nch)
	d.cDone = make([]bool, nch)
	d.fMetaLeft = make([]int32, R*C)
	d.fOpen = make([]bool, R*C)
	d.fq = make([][]int32, R*C*G)
	d.fBusy = make([]bool, R*C*G)
	d.fFree = make([]sim.Time, R*C*G)
	d.fCur = make([]int32, R*C*G)
	d.chanGate = make([]critPath, R*C)
	d.fPath = make([]critPath, R*C*G)
	d.rPath = make([]critPath, R*C*G)
	for i := range d.chanGate {
		d.chanGate[i] = d.root()
	}
	d.sPath = make([]critPath, nst)
	d.cPath = make([]critPath, nch)
	d.stCons = make([]int32, nst)
	d.headSent = make([]int32, nst)
	d.hq = make([][]int64, R*C)
	d.hBusy = make([]bool, R*C)
	d.rq = make([][]int32, R*C*G)
	d.rBusy = make([]bool, R*C*G)
	d.rFree = make([]sim.Time, R*C*G)
	d.rCur = make([]int32, R*C*G)
	d.seenTok = make([]uint8, len(n.RankList))
	d.sumGot = make([]uint64, R)
	for i := range d.fMetaLeft {
		d.fMetaLeft[i] = int32(N - 1)
	}
	for r := range R {
		d.left[r] = n.RecvPerRank[r]
	}
	// Posting warps: per channel seven sender warps and a coordinator on
	// the sender SM, a head poster on the forwarder SM.
	d.c0 = R * C * rdmaSenderWarps
	d.h0 = d.c0 + R*C
	d.sms = make([]hw.SM, R*C*2)
	d.pool.init(d.h0 + R*C)
	resume := d.resume
	for sc := range R * C {
		r := sc / C
		for w := range rdmaSenderWarps {
			d.newTransportWarp(sc*rdmaSenderWarps+w, r, sc*2, resume)
		}
		d.newTransportWarp(d.c0+sc, r, sc*2, resume)
		d.newTransportWarp(d.h0+sc, r, sc*2+1, resume)
		d.sMetaLeft[sc] = rdmaSenderWarps
	}
	d.bg = newBackground(e, cfg.Background, conn, g, R, 2*C)
	for r := range R {
		d.start[r] = cfg.Background.origin() + notify[r] + g.on(r, g.kern.start)
		e.At(d.start[r], d.id, opNodeStart, int64(r))
	}
	if err := d.run(); err != nil {
		return transport.Resources{}, err
	}
	d.finishNodes(selectionBytes(cfg.Routing, d.tb), deepepTokenBytes(n.Shape, false), cfg.Background.origin())
	whole := ph.Failure == nil
	checkPairs(probs, d.seenTok, whole, "internode dispatch")
	if !cfg.NoPayload && whole {
		checkPayloads(probs, cfg.Routing, n, d.sumGot, "internode dispatch")
	}
	return conn.Resources(), nil
}

func (d *nodeDispatch) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case opNodeStart:
		d.startRank(e, int(arg))
	case opSendStep:
		d.sendStep(e, int(arg))
	case opChunkReady:
		sc := int(d.ck.cSt[arg]) / d.plan.N
		d.cq[sc] = append(d.cq[sc], int32(arg))
		if !d.cBusy[sc] {
			d.coordNext(e, sc)
		}
	case opCoordNext:
		d.coordNext(e, int(arg))
	case opTailSeen:
		d.tailSeenAt(e, int(arg))
	case opMetaSeen:
		fc := int(arg)
		d.fMetaLeft[fc]--
		d.openForwarder(e, fc)
	case opFwdDone:
		d.fwdDone(e, int(arg))
	case opNVLSeen:
		sub := &d.subs[arg]
		sub.detect = e.Now()
		rw := d.recvWarp(sub)
		d.rq[rw] = append(d.rq[rw], int32(arg))
		if !d.rBusy[rw] {
			d.recvNext(e, rw)
		}
	case opNodeRecvDone:
		d.recvDone(e, int(arg))
	case opHeadSeen:
		d.creditSeen(e, d.takeHead(arg))
	}
}

// startRank launches rank r's kernel: its sender warps write the
// channels' counts to every remote node; its forwarders may open.
func (d *nodeDispatch) startRank(e *sim.Engine, r int) {
	C := d.plan.C
	for ch := range C {
		sc := r*C + ch
		for w := range rdmaSenderWarps {
			i := sc*rdmaSenderWarps + w
			d.pool.a[i].w.T.T = e.Now()
			d.pool.a[i].st.j = 0
			d.nextMeta(e, i)
		}
		d.openForwarder(e, sc)
	}
	d.readyEmpty(r)
}

// metaBytes is one channel's counts for a node: per local rank the
// channel's start and end, and the node's start and end.
func (d *nodeDispatch) metaBytes() int { return 4 * (2*d.plan.G + 2) }

// nextMeta posts sender warp i's next count message (nodes w, w+7, …,
// skipping its own), or starts the token loop once every warp is done.
func (d *nodeDispatch) nextMeta(e *sim.Engine, i int) {
	sc, w := i/rdmaSenderWarps, i%rdmaSenderWarps
	src, ch := sc/d.plan.C, sc%d.plan.C
	ws := &d.pool.a[i].st
	for {
		dn := w + rdmaSenderWarps*int(ws.j)
		if dn >= d.plan.N {
			break
		}
		ws.j++
		if dn == d.s.DomainOf(src) {
			continue
		}
		ws.role = roleCount
		d.send(e, i, transport.Op{Src: src, Dst: dn*d.plan.G + src%d.plan.G, Channel: ch, Bytes: d.metaBytes(), Flush: true, Tag: tagMeta})
		return
	}
	d.sMetaLeft[sc]--
	if d.sMetaLeft[sc] > 0 {
		return
	}
	// Barrier of the sender warps, then the token loop.
	t := e.Now()
	for w := range rdmaSenderWarps {
		t = max(t, d.pool.a[sc*rdmaSenderWarps+w].w.T.T)
	}
	for w := range rdmaSenderWarps {
		d.sFree[sc*rdmaSenderWarps+w] = t
	}
	e.At(t, d.id, opSendStep, int64(sc))
}

// sendStep copies the channel's next tokens into the send buffers of
// their nodes while their warps are free and the buffers have room.
func (d *nodeDispatch) sendStep(e *sim.Engine, sc int) {
	p := d.plan
	src, ch := sc/p.C, sc%p.C
	T := d.cfg.Routing.Tokens[src]
	lo := ch * p.per[src]
	hi := min(lo+p.per[src], T)
	for {
		i := int(d.sNext[sc])
		t := lo + i
		if t >= hi {
			return
		}
		w := sc*rdmaSenderWarps + i%rdmaSenderWarps
		start := max(e.Now(), d.sFree[w])
		if start > e.Now() {
			e.At(start, d.id, opSendStep, int64(sc))
			return
		}
		nodes := d.n.NodesOf(src, t)
		for _, dn := range nodes {
			st := p.stream(src, ch, int(dn))
			if int(d.sFill[st]-d.head[st]) >= d.cfgN.rdmaBuf {
				d.waitSt[st] = true
				return
			}
		}
		d.sNext[sc]++
		if len(nodes) == 0 {
			continue
		}
		// One read, a write into each destination node's buffer.
		bytes := d.tb * int64(len(nodes))
		end := d.warpCopy(src, start, bytes, 0)
		d.sFree[w] = end
		d.work(src, end)
		path := d.chanGate[sc]
		path.step(CauseSync, start)
		path.step(CauseSender, end)
		for _, dn := range nodes {
			st := p.stream(src, ch, int(dn))
			k := int(d.sFill[st])
			d.sFill[st]++
			if end >= d.sReady[st] {
				d.sReady[st], d.sPath[st] = end, path
			}
			if (k+1)%d.ck.size == 0 || k+1 == p.streamLen(st) {
				ci := int(d.ck.cOff[st]) + k/d.ck.size
				d.cPath[ci] = d.sPath[st]
				e.At(d.sReady[st], d.id, opChunkReady, int64(ci))
			}
		}
	}
}

// coordNext has sender coordinator sc write its next ready chunk: an RDMA
// write and a tail atomic to a remote node, a local tail bump for its own.
func (d *nodeDispatch) coordNext(e *sim.Engine, sc int) {
	if len(d.cq[sc]) == 0 {
		d.cBusy[sc] = false
		return
	}
	d.cBusy[sc] = true
	ci := int(d.cq[sc][0])
	d.cq[sc] = d.cq[sc][1:]
	d.cCur[sc] = int32(ci)
	st, lo, hi := d.ck.bounds(d.plan, ci)
	src, ch, dn := d.plan.streamSrc(st)
	i := d.c0 + sc
	if dn == d.s.DomainOf(src) {
		w := &d.pool.a[i].w
		w.T.T = max(w.T.T, e.Now())
		t0 := w.T.T
		w.T.Compute(w.T.C().FenceGPU + w.T.C().Atomic)
		d.noteIssue(w, t0)
		d.cLocal[ci], d.dataSeen[ci], d.tailSeen[ci] = true, true, true
		d.cTimes[ci] = transport.Times{IssueStart: t0, IssueEnd: w.T.T, Posted: w.T.T, Served: w.T.T, Sent: w.T.T, Arrived: w.T.T, Visible: w.T.T}
		e.At(d.g.pollDetect(w.T.T), d.id, opTailSeen, int64(ci))
		e.At(w.T.T, d.id, opCoordNext, int64(sc))
		return
	}
	f := dn*d.plan.G + src%d.plan.G
	d.cTail[sc] = false
	d.send(e, i, transport.Op{Src: src, Dst: f, Channel: ch, Bytes: (hi - lo) * int(d.tb), Tag: int64(ci)})
}

func (d *nodeDispatch) resume(e *sim.Engine, w *transport.Warp) {
	i := int(w.ID)
	d.noteIssue(w, d.pool.a[i].st.start)
	switch {
	case i < d.c0:
		d.nextMeta(e, i)
	case i < d.h0:
		sc := i - d.c0
		if !d.cTail[sc] {
			// The data write is posted; its tail follows on the same QP.
			ci := int(d.cCur[sc])
			src, ch, dn := d.plan.streamSrc(int(d.ck.cSt[ci]))
			d.cTail[sc] = true
			d.send(e, i, transport.Op{Src: src, Dst: dn*d.plan.G + src%d.plan.G, Channel: ch, Bytes: 8, Atomic: true, Flush: true, Tag: tagCount | int64(ci)})
			return
		}
		e.At(max(w.T.T, e.Now()), d.id, opCoordNext, int64(sc))
	default:
		d.headNext(e, i-d.h0)
	}
}

func (d *nodeDispatch) delivered(e *sim.Engine, dl transport.Delivery) {
	if !d.accept(dl) {
		return
	}
	tag := dl.Op.Tag
	det := d.g.pollDetect(dl.Times.Visible)
	switch {
	case tag&tagMeta != 0:
		e.At(det, d.id, opMetaSeen, int64(dl.Op.Dst*d.plan.C+dl.Op.Channel))
	case tag&tagHead != 0:
		d.headDelivered(tag, dl.Times, det)
		e.At(det, d.id, opHeadSeen, tag)
	case tag&tagCount != 0:
		ci := int(tag &^ tagCount)
		if !d.dataSeen[ci] {
			d.probs.add("internode dispatch: chunk %d's tail arrived before its data", ci)
		}
		if d.tailSeen[ci] {
			d.probs.add("internode dispatch: chunk %d's tail arrived twice", ci)
			return
		}
		d.tailSeen[ci] = true
		d.cTimes[ci] = dl.Times
		e.At(det, d.id, opTailSeen, int64(ci))
	default:
		ci := int(tag)
		if d.dataSeen[ci] {
			d.probs.add("internode dispatch: chunk %d's data arrived twice", ci)
		}
		d.dataSeen[ci] = true
	}
}

// openForwarder starts forwarder channel fc once its rank's kernel runs
// and the counts of every source node arrived.
func (d *nodeDispatch) openForwarder(e *sim.Engine, fc int) {
	f := fc / d.plan.C
	if d.fOpen[fc] || d.fMetaLeft[fc] > 0 || e.Now() < d.start[f] {
		return
	}
	d.fOpen[fc] = true
	for j := range d.plan.G {
		fw := fc*d.plan.G + j
		d.fFree[fw] = max(d.fFree[fw], e.Now())
		if !d.fBusy[fw] && len(d.fq[fw]) > 0 {
			d.fwdNext(e, fw)
		}
	}
}

// tailSeenAt hands an arrived chunk to the forwarder warps of the local
// ranks its tokens go to.
func (d *nodeDispatch) tailSeenAt(e *sim.Engine, ci int) {
	d.cPath[ci].delivery(d.cTimes[ci], d.cLocal[ci], d.g.nic.floor(transport.Op{Atomic: true, Bytes: 8}, false))
	d.cPath[ci].step(CauseObserve, e.Now())
	st, lo, hi := d.ck.bounds(d.plan, ci)
	src, ch, dn := d.plan.streamSrc(st)
	f := dn*d.plan.G + src%d.plan.G
	fc := f*d.plan.C + ch
	var mask peerMask
	for e := lo; e < hi; e++ {
		mask.or(&d.plan.sMask[int(d.plan.sOff[st])+e])
	}
	if mask.empty() {
		d.chunkConsumed(e, ci, d.cPath[ci])
		return
	}
	for j := range d.plan.G {
		if !mask.has(j) {
			continue
		}
		fw := fc*d.plan.G + j
		d.cPending[ci]++
		d.fq[fw] = append(d.fq[fw], int32(ci))
		if d.fOpen[fc] && !d.fBusy[fw] {
			d.fwdNext(e, fw)
		}
	}
}

// fwdNext has forwarder warp fw forward its next chunk's tokens for its
// local rank, nvl_chunk at a time.
func (d *nodeDispatch) fwdNext(e *sim.Engine, fw int) {
	if len(d.fq[fw]) == 0 {
		d.fBusy[fw] = false
		return
	}
	d.fBusy[fw] = true
	ci := int(d.fq[fw][0])
	d.fq[fw] = d.fq[fw][1:]
	d.fCur[fw] = int32(ci)
	p := d.plan
	fc, j := fw/p.G, fw%p.G
	f := fc / p.C
	st, lo, hi := d.ck.bounds(p, ci)
	base := int(p.sOff[st])
	t := max(e.Now(), d.fFree[fw])
	// Reading each token's source meta to see whether it is bound here.
	t += sim.Time(hi-lo) * d.g.costsOf(f).L2Load
	local := j == f%p.G
	// A warp still busy with earlier copies gates this chunk by them.
	path := d.cPath[ci]
	if d.fPath[fw].cur > path.cur {
		path = d.fPath[fw]
	}
	cause := CauseNVLink
	if local {
		cause = CauseCopy
	}
	path.step(CauseSync, t)
	for a := lo; a < hi; {
		n := 0
		b := a
		for ; b < hi && n < d.cfgN.nvlChunk; b++ {
			if p.sMask[base+b].has(j) {
				n++
			}
		}
		if n > 0 {
			bytes := int64(n) * d.tb
			sub := nvlSub{ci: int32(ci), lo: int32(a), hi: int32(b), j: int32(j), n: int32(n)}
			if local {
				sub.fwdEnd = d.warpCopy(f, t, bytes, 0)
				sub.visible = sub.fwdEnd
			} else {
				sub.fwdEnd, sub.visible = d.nvl.copy(f, t, bytes)
				d.phase.NVLinkBytes += bytes
			}
			t = sub.fwdEnd
			path.step(cause, sub.fwdEnd)
			sub.path = path
			sub.path.step(cause, sub.visible)
			k := d.newSub(sub)
			e.At(d.g.pollDetect(sub.visible), d.id, opNVLSeen, int64(k))
		}
		a = b
	}
	d.fPath[fw] = path
	d.fFree[fw] = t
	d.work(f, t)
	e.At(t, d.id, opFwdDone, int64(fw))
}

func (d *nodeDispatch) newSub(s nvlSub) int32 {
	if k := len(d.freeS); k > 0 {
		i := d.freeS[k-1]
		d.freeS = d.freeS[:k-1]
		d.subs[i] = s
		return i
	}
	d.subs = append(d.subs, s)
	return int32(len(d.subs) - 1)
}

func (d *nodeDispatch) fwdDone(e *sim.Engine, fw int) {
	ci := int(d.fCur[fw])
	d.cPending[ci]--
	if d.cPending[ci] == 0 {
		// The last warp to take the chunk releases it.
		path := d.fPath[fw]
		path.step(CauseNVLink, e.Now())
		d.chunkConsumed(e, ci, path)
	}
	d.fwdNext(e, fw)
}

// chunkConsumed releases a chunk's buffer slots: once the stream's head
// moved by rdma_chunk tokens, the forwarder coordinator returns the credit
// to the sender (an atomic on the sender's head; a local store for the
// forwarder's own node).
func (d *nodeDispatch) chunkConsumed(e *sim.Engine, ci int, path critPath) {
	d.cDone[ci] = true
	p := d.plan
	st := int(d.ck.cSt[ci])
	for {
		k := int(d.ck.cOff[st]) + int(d.stCons[st])
		if k >= int(d.ck.cOff[st+1]) || !d.cDone[k] {
			break
		}
		d.stCons[st]++
	}
	cons := min(int(d.stCons[st])*d.ck.size, p.streamLen(st))
	if cons-int(d.headSent[st]) < d.cfgN.rdmaChunk {
		return
	}
	d.headSent[st] = int32(cons)
	src, ch, dn := p.streamSrc(st)
	if dn == d.s.DomainOf(src) {
		at, tag := d.headLocal(e, st, cons, path)
		e.At(at, d.id, opHeadSeen, tag)
		return
	}
	tag := d.newHead(st, cons, path)
	fc := (dn*p.G+src%p.G)*p.C + ch
	d.hq[fc] = append(d.hq[fc], tag)
	if !d.hBusy[fc] {
		d.headNext(e, fc)
	}
}

// headNext posts forwarder channel fc's next credit return.
func (d *nodeDispatch) headNext(e *sim.Engine, fc int) {
	if len(d.hq[fc]) == 0 {
		d.hBusy[fc] = false
		return
	}
	d.hBusy[fc] = true
	tag := d.hq[fc][0]
	d.hq[fc] = d.hq[fc][1:]
	hv := d.headVals[tag&^tagHead]
	src, ch, _ := d.plan.streamSrc(int(hv.st))
	f := fc / d.plan.C
	d.send(e, d.h0+fc, transport.Op{Src: f, Dst: src, Channel: d.plan.C + ch, Bytes: 8, Atomic: true, Flush: true, Tag: tag})
}

// creditSeen raises a stream's head at its sender and wakes the sender if
// it waited for room.
func (d *nodeDispatch) creditSeen(e *sim.Engine, hv headVal) {
	st := int(hv.st)
	d.head[st] = max(d.head[st], hv.value)
	if d.waitSt[st] {
		d.waitSt[st] = false
		d.chanGate[st/d.plan.N] = hv.path
		e.At(e.Now(), d.id, opSendStep, int64(st/d.plan.N))
	}
}

// recvWarp is the receiver warp of a batch: on the target rank, for the
// batch's channel and forwarding rank.
func (d *nodeDispatch) recvWarp(sub *nvlSub) int {
	p := d.plan
	src, ch, dn := p.streamSrc(int(d.ck.cSt[sub.ci]))
	target := dn*p.G + int(sub.j)
	return (target*p.C+ch)*p.G + src%p.G
}

// recvNext copies receiver warp rw's next batch into recv_x.
func (d *nodeDispatch) recvNext(e *sim.Engine, rw int) {
	if len(d.rq[rw]) == 0 {
		d.rBusy[rw] = false
		return
	}
	d.rBusy[rw] = true
	k := d.rq[rw][0]
	d.rq[rw] = d.rq[rw][1:]
	d.rCur[rw] = k
	sub := &d.subs[k]
	target := rw / d.plan.G / d.plan.C
	start := max(e.Now(), d.rFree[rw], d.start[target])
	bytes := int64(sub.n) * d.tb
	end := d.warpCopy(target, start, bytes, sim.Time(sub.n)*d.g.kern.recvToken)
	d.rFree[rw] = end
	sub.recvStart = start
	e.At(end, d.id, opNodeRecvDone, int64(rw))
}

// recvDone checks and counts a received batch: every token exactly once
// per destination rank, its payload, and the rank's critical path through
// both hops.
func (d *nodeDispatch) recvDone(e *sim.Engine, rw int) {
	p := d.plan
	k := d.rCur[rw]
	sub := d.subs[k]
	d.freeS = append(d.freeS, k)
	st := int(d.ck.cSt[sub.ci])
	src, _, dn := p.streamSrc(st)
	target := dn*p.G + int(sub.j)
	base := int(p.sOff[st])
	j := int(sub.j)
	for a := sub.lo; a < sub.hi; a++ {
		m := &p.sMask[base+int(a)]
		if !m.has(j) {
			continue
		}
		d.seenTok[int(p.sPair[base+int(a)])+m.below(j)]++
		if !d.cfg.NoPayload {
			d.sumGot[target] += Payload(src, int(p.sTok[base+int(a)]))
		}
	}
	rt := &d.phase.Ranks[target]
	rt.LastDelivered = max(rt.LastDelivered, sub.visible)
	path := sub.path
	path.step(CauseObserve, sub.detect)
	if d.rPath[rw].cur > path.cur {
		path = d.rPath[rw] // the warp was still copying earlier batches
	}
	path.step(CauseSync, sub.recvStart)
	path.step(CauseCopy, e.Now())
	d.rPath[rw] = path
	d.doneRecv(target, int64(sub.n), e.Now(), path)
	d.recvNext(e, rw)
}
