package moe

import (
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
)

// Tags of the internode control messages (tagCount marks tails).
const (
	tagMeta = int64(1) << 60 // a channel's counts for a node
	tagHead = int64(1) << 59 // credit returned to a sender; low bits index nodeBase.heads
)

// warpCopy is one warp copying bytes on rank's GPU: the GPU's copy
// bandwidth shared in event order, the warp's rate and its fixed latency
// per copy (gpu.warp_copy_ns) plus extra (per-token work).
func (b *nodeBase) warpCopy(rank int, start sim.Time, bytes int64, extra sim.Time) sim.Time {
	return b.g.copyN(rank, start, bytes, bytes, b.g.kern.warpCopy+extra)
}

// nodeBase is what both internode phases share beyond phaseRun.
type nodeBase struct {
	phaseRun
	plan   *nodePlan
	n      *NormalLayout
	nvl    *nvlModel
	cfgN   nodeConfig
	ck     chunking
	tb     int64      // bytes per token on the wire
	origin sim.Time   // the phase's start (after a background's warm-up)
	start  []sim.Time // per rank: its kernel launched
	last   []sim.Time // per rank: its kernel's last work (any role)
	ready  []sim.Time
	gate   []critPath // per rank: the critical path to ready
	left   []int64    // per rank: tokens still to receive
	// what names the phase in its problems; combine runs the streams back,
	// from the forwarders to the sources (ends).
	what    string
	combine bool
	// per stream: its latest entry ready to write and that entry's path,
	// the credit returned to its writer (head) and sent back so far, and
	// whether its writer waits for credit
	sReady   []sim.Time
	sPath    []critPath
	head     []int32
	headSent []int32
	wait     []bool
	// per chunk: its tail's delivery, and the critical path up to it
	cTimes   []transport.Times
	cLocal   []bool
	dataSeen []bool
	tailSeen []bool
	cPath    []critPath
	// Chunk posters, each a queue of ready chunks it writes in turn (data,
	// then the tail on the same QP): poster q serves the streams from
	// q·pDiv on, from pool warp p0+q.
	posts    workQueues[int32]
	pTail    []bool
	pCur     []int32
	pDiv, p0 int
	// Credit returners, one per (receiving rank, channel), each a queue of
	// head atomics posted from pool warp h0+q.
	credits workQueues[int64]
	h0      int
	heads   slots[headVal] // head atomics in flight
}

type headVal struct {
	st    int32
	value int32
	path  critPath // the critical path of the credit, as it travels
}

func (b *nodeBase) init(cfg *LayerConfig, n *NormalLayout, plan *nodePlan, g *gpuModel, probs *problemList, ph *Phase, combine bool) {
	s := n.Shape
	b.phaseRun.init(nil, cfg, s, normalLaunch(cfg.NumSMs), g, probs, ph)
	b.plan, b.n = plan, n
	b.nvl = newNVLModel(cfg.Profile, b.R)
	b.cfgN = recommendedConfig(s.Ranks, combine)
	if cfg.Chunk > 0 {
		b.cfgN.rdmaChunk = cfg.Chunk
	}
	b.ck = newChunking(plan, b.cfgN.rdmaChunk)
	b.origin = cfg.Background.origin()
	b.start = make([]sim.Time, b.R)
	b.last = make([]sim.Time, b.R)
	b.ready = make([]sim.Time, b.R)
	b.gate = make([]critPath, b.R)
	b.left = make([]int64, b.R)
	b.what, b.combine, b.pDiv = "internode dispatch", combine, plan.N
	if combine {
		b.what, b.pDiv = "internode combine", 1
	}
	nst, nch := len(plan.sOff)-1, len(b.ck.cSt)
	b.sReady = make([]sim.Time, nst)
	b.sPath = make([]critPath, nst)
	b.head = make([]int32, nst)
	b.headSent = make([]int32, nst)
	b.wait = make([]bool, nst)
	b.cTimes = make([]transport.Times, nch)
	b.cLocal = make([]bool, nch)
	b.dataSeen = make([]bool, nch)
	b.tailSeen = make([]bool, nch)
	b.cPath = make([]critPath, nch)
	b.posts = newWorkQueues[int32](nst / b.pDiv)
	b.pTail = make([]bool, nst/b.pDiv)
	b.pCur = make([]int32, nst/b.pDiv)
	b.credits = newWorkQueues[int64](b.R * plan.C)
}

// ends is the ranks a stream's chunks go from and to, and its channel:
// from the source to its forwarder in dispatch, back in combine.
func (b *nodeBase) ends(st int) (from, to, ch int) {
	src, ch, dn := b.plan.streamSrc(st)
	f := dn*b.plan.G + src%b.plan.G
	if b.combine {
		return f, src, ch
	}
	return src, f, ch
}

// filled notes entry k of stream st ready to write at end along path; a
// chunk's last entry makes the chunk ready at the stream's latest.
func (b *nodeBase) filled(e *sim.Engine, st, k int, end sim.Time, path critPath) {
	if end >= b.sReady[st] {
		b.sReady[st], b.sPath[st] = end, path
	}
	if (k+1)%b.ck.size == 0 || k+1 == b.plan.streamLen(st) {
		ci := int(b.ck.cOff[st]) + k/b.ck.size
		b.cPath[ci] = b.sPath[st]
		e.At(b.sReady[st], b.id, opChunkReady, int64(ci))
	}
}

// chunkReady queues chunk ci at its poster.
func (b *nodeBase) chunkReady(e *sim.Engine, ci int) {
	q := int(b.ck.cSt[ci]) / b.pDiv
	b.posts.push(q, int32(ci))
	if !b.posts.busy[q] {
		b.postNext(e, q)
	}
}

// postNext has poster q write its next ready chunk: an RDMA write (its
// tail follows in postResume), or a local tail bump on the chunk's own
// node.
func (b *nodeBase) postNext(e *sim.Engine, q int) {
	next, ok := b.posts.take(q)
	if !ok {
		return
	}
	ci := int(next)
	b.pCur[q] = int32(ci)
	st, lo, hi := b.ck.bounds(b.plan, ci)
	from, to, ch := b.ends(st)
	i := b.p0 + q
	if from == to {
		w := &b.pool.a[i].w
		w.T.T = max(w.T.T, e.Now())
		t0 := w.T.T
		w.T.Compute(w.T.C().FenceGPU + w.T.C().Atomic)
		b.noteIssue(w, t0)
		b.cLocal[ci], b.dataSeen[ci], b.tailSeen[ci] = true, true, true
		b.cTimes[ci] = transport.Times{IssueStart: t0, IssueEnd: w.T.T, Posted: w.T.T, Served: w.T.T, Sent: w.T.T, Arrived: w.T.T, Visible: w.T.T}
		e.At(b.g.pollDetect(w.T.T), b.id, opTailSeen, int64(ci))
		e.At(w.T.T, b.id, opCoordNext, int64(q))
		return
	}
	b.pTail[q] = false
	b.send(e, i, transport.Op{Src: from, Dst: to, Channel: ch, Bytes: (hi - lo) * int(b.tb), Tag: int64(ci)})
}

// postResume follows poster q's data write with its tail atomic on the
// same QP, then moves on to the next chunk.
func (b *nodeBase) postResume(e *sim.Engine, w *transport.Warp, q int) {
	if !b.pTail[q] {
		ci := int(b.pCur[q])
		from, to, ch := b.ends(int(b.ck.cSt[ci]))
		b.pTail[q] = true
		b.send(e, b.p0+q, transport.Op{Src: from, Dst: to, Channel: ch, Bytes: 8, Atomic: true, Flush: true, Tag: tagCount | int64(ci)})
		return
	}
	e.At(max(w.T.T, e.Now()), b.id, opCoordNext, int64(q))
}

// tailObserved extends chunk ci's path by its tail's delivery and the
// receiver seeing it.
func (b *nodeBase) tailObserved(e *sim.Engine, ci int) {
	b.cPath[ci].delivery(b.cTimes[ci], b.cLocal[ci], b.g.nic.floor(transport.Op{Atomic: true, Bytes: 8}, false))
	b.cPath[ci].step(CauseObserve, e.Now())
}

// delivered handles what both phases deliver: a credit, a chunk's tail
// (checked to follow its data, once) or its data.
func (b *nodeBase) delivered(e *sim.Engine, dl transport.Delivery, det sim.Time) {
	tag := dl.Op.Tag
	switch {
	case tag&tagHead != 0:
		b.headDelivered(tag, dl.Times, det)
		e.At(det, b.id, opHeadSeen, tag)
	case tag&tagCount != 0:
		ci := int(tag &^ tagCount)
		if !b.dataSeen[ci] {
			b.probs.add("%s: chunk %d's tail arrived before its data", b.what, ci)
		}
		if b.tailSeen[ci] {
			b.probs.add("%s: chunk %d's tail arrived twice", b.what, ci)
			return
		}
		b.tailSeen[ci] = true
		b.cTimes[ci] = dl.Times
		e.At(det, b.id, opTailSeen, int64(ci))
	default:
		ci := int(tag)
		if b.dataSeen[ci] {
			b.probs.add("%s: chunk %d's data arrived twice", b.what, ci)
		}
		b.dataSeen[ci] = true
	}
}

// returnCredit gives cons consumed entries of stream st back to its
// writer once they are rdma_chunk more than last returned: a head atomic
// from the stream's credit returner, or a local store on one node.
func (b *nodeBase) returnCredit(e *sim.Engine, st, cons int, path critPath) {
	if cons-int(b.headSent[st]) < b.cfgN.rdmaChunk {
		return
	}
	b.headSent[st] = int32(cons)
	from, to, ch := b.ends(st)
	if from == to {
		at, tag := b.headLocal(e, st, cons, path)
		e.At(at, b.id, opHeadSeen, tag)
		return
	}
	tag := b.newHead(st, cons, path)
	q := to*b.plan.C + ch
	b.credits.push(q, tag)
	if !b.credits.busy[q] {
		b.headNext(e, q)
	}
}

// headNext posts credit returner q's next head atomic.
func (b *nodeBase) headNext(e *sim.Engine, q int) {
	tag, ok := b.credits.take(q)
	if !ok {
		return
	}
	from, to, ch := b.ends(int(b.heads.a[tag&^tagHead].st))
	b.send(e, b.h0+q, transport.Op{Src: to, Dst: from, Channel: b.plan.C + ch, Bytes: 8, Atomic: true, Flush: true, Tag: tag})
}

// headSeen raises a stream's head at its writer by a credit and reports
// whether the writer waited for it.
func (b *nodeBase) headSeen(hv headVal) bool {
	st := int(hv.st)
	b.head[st] = max(b.head[st], hv.value)
	if !b.wait[st] {
		return false
	}
	b.wait[st] = false
	return true
}

// warpPath is the path a warp's next work starts from: path, or the
// path to the warp's own last work when that ended later.
func warpPath(path, warp critPath) critPath {
	if warp.cur > path.cur {
		return warp
	}
	return path
}

// newHead files a head value for an atomic in flight and returns its tag.
func (b *nodeBase) newHead(st, value int, path critPath) int64 {
	return tagHead | int64(b.heads.put(headVal{int32(st), int32(value), path}))
}

func (b *nodeBase) takeHead(tag int64) headVal {
	return b.heads.take(int32(tag &^ tagHead))
}

// work notes that rank r's kernel was busy until t.
func (b *nodeBase) work(r int, t sim.Time) { b.last[r] = max(b.last[r], t) }

// doneRecv records tokens received by rank r, ending at end along path.
func (b *nodeBase) doneRecv(r int, n int64, end sim.Time, path critPath) {
	b.work(r, end)
	if end >= b.ready[r] {
		b.ready[r], b.gate[r] = end, path
	}
	b.left[r] -= n
	if b.left[r] == 0 {
		b.rankReady(r, b.ready[r], b.gate[r].b)
	}
}

// readyEmpty makes the ranks that receive nothing ready at their start.
func (b *nodeBase) readyEmpty(r int) {
	if b.left[r] == 0 {
		b.ready[r] = b.start[r] + 1
		p := b.root()
		p.step(CauseSync, b.ready[r])
		b.rankReady(r, b.ready[r], p.b)
	}
}

// finishNodes closes an internode phase: each rank's kernel bounds, the
// summaries, and DeepEP's count, the rank's (token, node) pairs × its
// token bytes.
func (b *nodeBase) finishNodes(algo []int64, tokenBytes int64, origin sim.Time) {
	for r := range b.R {
		rt := &b.phase.Ranks[r]
		rt.Launch, rt.End = b.start[r], max(b.last[r], b.issueDone[r], b.ready[r])
	}
	b.phase.finish(algo, origin)
	bytes := make([]int64, b.R)
	for r := range bytes {
		bytes[r] = b.plan.pairs[r] * tokenBytes
	}
	b.phase.deepepOver(bytes)
}

// root is an empty critical path at the phase's start.
func (b *nodeBase) root() critPath { return critPath{cur: b.origin} }

// headDelivered extends a credit's path by the atomic's delivery and the
// sender noticing it.
func (b *nodeBase) headDelivered(tag int64, t transport.Times, detect sim.Time) {
	hv := &b.heads.a[tag&^tagHead]
	hv.path.delivery(t, false, b.g.nic.floor(transport.Op{Atomic: true, Bytes: 8}, false))
	hv.path.step(CauseObserve, detect)
}

// headLocal is a credit returned on the same GPU: an atomic, then a poll.
func (b *nodeBase) headLocal(e *sim.Engine, st, value int, path critPath) (sim.Time, int64) {
	at := e.Now() + b.g.costs.Atomic
	path.step(CauseIssue, at)
	det := b.g.pollDetect(at)
	path.step(CauseObserve, det)
	return det, b.newHead(st, value, path)
}

// newTransportWarp makes pool warp i a posting warp of rank r on SM sm
// (an index into b.sms: (rank·C + channel)·2, +1 for the forwarder SM).
func (b *nodeBase) newTransportWarp(i, r, sm int, resume func(*sim.Engine, *transport.Warp)) {
	b.sms[sm].Lanes++
	b.pool.a[i].w = transport.Warp{Rank: int32(r), ID: int32(i), T: hw.NewThread(b.g.costsOf(r), &b.sms[sm]), Resume: resume}
}

// send posts op from pool warp i at the warp's time.
func (b *nodeBase) send(e *sim.Engine, i int, op transport.Op) {
	w := &b.pool.a[i].w
	w.T.T = max(w.T.T, e.Now())
	b.pool.a[i].st.start = w.T.T
	b.messages++
	b.conn.Post(e, w, op)
}

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

// workQueues are FIFO queues of work, one per worker (a warp, a poster):
// a worker is busy from taking an item until it finds its queue empty.
type workQueues[T any] struct {
	q    [][]T
	busy []bool
}

func newWorkQueues[T any](n int) workQueues[T] {
	return workQueues[T]{q: make([][]T, n), busy: make([]bool, n)}
}

// push queues v for worker i; the caller starts it if it is not busy.
func (w *workQueues[T]) push(i int, v T) { w.q[i] = append(w.q[i], v) }

// take gives worker i its next item and keeps it busy, or leaves it idle
// when its queue is empty.
func (w *workQueues[T]) take(i int) (T, bool) {
	if len(w.q[i]) == 0 {
		w.busy[i] = false
		var none T
		return none, false
	}
	w.busy[i] = true
	v := w.q[i][0]
	w.q[i] = w.q[i][1:]
	return v, true
}
