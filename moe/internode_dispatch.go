package moe

import (
	"moebench/hw"
	"moebench/sim"
	"moebench/transport"
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
	sFill     []int32 // per stream: tokens copied into its send buffer
	// the critical path of the credit a channel last waited for
	chanGate []critPath
	// chunks
	cPending []int32
	cDone    []bool
	// forwarders fc = f·C + ch, their warps fw = fc·G + j
	fMetaLeft []int32
	fOpen     []bool
	fwd       workQueues[int32] // per forwarder warp: chunks to forward
	fFree     []sim.Time
	fCur      []int32
	fPath     []critPath // the path to the warp's last copy
	rPath     []critPath // the path to the receiver warp's last copy
	stCons    []int32    // per stream: chunks consumed in order
	// receivers rw = (r·C + ch)·G + l
	subs  slots[nvlSub]
	recv  workQueues[int32] // per receiver warp: batches to copy out
	rFree []sim.Time
	rCur  []int32
	// checks
	seenTok []uint8
	sumGot  []uint64
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
	d.cPending = make([]int32, nch)
	d.cDone = make([]bool, nch)
	d.fMetaLeft = make([]int32, R*C)
	d.fOpen = make([]bool, R*C)
	d.fwd = newWorkQueues[int32](R * C * G)
	d.fFree = make([]sim.Time, R*C*G)
	d.fCur = make([]int32, R*C*G)
	d.chanGate = make([]critPath, R*C)
	d.fPath = make([]critPath, R*C*G)
	d.rPath = make([]critPath, R*C*G)
	for i := range d.chanGate {
		d.chanGate[i] = d.root()
	}
	d.stCons = make([]int32, nst)
	d.recv = newWorkQueues[int32](R * C * G)
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
	// Posting warps: per channel seven sender warps and a coordinator (the
	// channel's chunk poster) on the sender SM, a head poster on the
	// forwarder SM.
	d.p0 = R * C * rdmaSenderWarps
	d.h0 = d.p0 + R*C
	d.sms = make([]hw.SM, R*C*2)
	d.pool.init(d.h0 + R*C)
	resume := d.resume
	for sc := range R * C {
		r := sc / C
		for w := range rdmaSenderWarps {
			d.newTransportWarp(sc*rdmaSenderWarps+w, r, sc*2, resume)
		}
		d.newTransportWarp(d.p0+sc, r, sc*2, resume)
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
		d.chunkReady(e, int(arg))
	case opCoordNext:
		d.postNext(e, int(arg))
	case opTailSeen:
		d.tailSeenAt(e, int(arg))
	case opMetaSeen:
		fc := int(arg)
		d.fMetaLeft[fc]--
		d.openForwarder(e, fc)
	case opFwdDone:
		d.fwdDone(e, int(arg))
	case opNVLSeen:
		sub := &d.subs.a[arg]
		sub.detect = e.Now()
		rw := d.recvWarp(sub)
		d.recv.push(rw, int32(arg))
		if !d.recv.busy[rw] {
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
				d.wait[st] = true
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
			d.filled(e, st, k, end, path)
		}
	}
}

func (d *nodeDispatch) resume(e *sim.Engine, w *transport.Warp) {
	i := int(w.ID)
	d.noteIssue(w, d.pool.a[i].st.start)
	switch {
	case i < d.p0:
		d.nextMeta(e, i)
	case i < d.h0:
		d.postResume(e, w, i-d.p0)
	default:
		d.headNext(e, i-d.h0)
	}
}

func (d *nodeDispatch) delivered(e *sim.Engine, dl transport.Delivery) {
	if !d.accept(dl) {
		return
	}
	det := d.g.pollDetect(dl.Times.Visible)
	if dl.Op.Tag&tagMeta != 0 {
		e.At(det, d.id, opMetaSeen, int64(dl.Op.Dst*d.plan.C+dl.Op.Channel))
		return
	}
	d.nodeBase.delivered(e, dl, det)
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
		if !d.fwd.busy[fw] && len(d.fwd.q[fw]) > 0 {
			d.fwdNext(e, fw)
		}
	}
}

// tailSeenAt hands an arrived chunk to the forwarder warps of the local
// ranks its tokens go to.
func (d *nodeDispatch) tailSeenAt(e *sim.Engine, ci int) {
	d.tailObserved(e, ci)
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
		d.fwd.push(fw, int32(ci))
		if d.fOpen[fc] && !d.fwd.busy[fw] {
			d.fwdNext(e, fw)
		}
	}
}

// fwdNext has forwarder warp fw forward its next chunk's tokens for its
// local rank, nvl_chunk at a time.
func (d *nodeDispatch) fwdNext(e *sim.Engine, fw int) {
	next, ok := d.fwd.take(fw)
	if !ok {
		return
	}
	ci := int(next)
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
	path := warpPath(d.cPath[ci], d.fPath[fw])
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
			k := d.subs.put(sub)
			e.At(d.g.pollDetect(sub.visible), d.id, opNVLSeen, int64(k))
		}
		a = b
	}
	d.fPath[fw] = path
	d.fFree[fw] = t
	d.work(f, t)
	e.At(t, d.id, opFwdDone, int64(fw))
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
	d.returnCredit(e, st, min(int(d.stCons[st])*d.ck.size, p.streamLen(st)), path)
}

// creditSeen raises a stream's head at its sender and wakes the sender if
// it waited for room.
func (d *nodeDispatch) creditSeen(e *sim.Engine, hv headVal) {
	if st := int(hv.st); d.headSeen(hv) {
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
	k, ok := d.recv.take(rw)
	if !ok {
		return
	}
	d.rCur[rw] = k
	sub := &d.subs.a[k]
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
	sub := d.subs.take(k)
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
	path = warpPath(path, d.rPath[rw]) // the warp may still copy earlier batches
	path.step(CauseSync, sub.recvStart)
	path.step(CauseCopy, e.Now())
	d.rPath[rw] = path
	d.doneRecv(target, int64(sub.n), e.Now(), path)
	d.recvNext(e, rw)
}

// runNotifyNodes is the internode notify step: one RDMA write per remote
// node to the rank of the same local index, then an NVLink exchange inside
// the node, then the host sees its counts and launches.
func runNotifyNodes(cfg *LayerConfig, ph *Phase, g *gpuModel) ([]sim.Time, transport.Resources, int64, error) {
	s := cfg.Routing.Shape
	R, N, G := s.Ranks, s.Domains(), s.DomainGPUs()
	// Counts for the node's ranks and their experts, plus the token total.
	bytes := 4 * (1 + G + G*s.LocalExperts())
	last, res, msgs, err := notifyWrites(cfg, ph, g, 1, N-1, bytes, func(r, _, k int) (int, int, bool) {
		dn := (s.DomainOf(r) + k + 1) % N
		return dn*G + r%G, 0, k+1 < N
	})
	if last == nil {
		return nil, res, msgs, err
	}
	nvl := newNVLModel(cfg.Profile, R)
	hostSee := sim.Ns(cfg.Profile.Get("pcie.dma_write_ns"))
	// The node's ranks forward what they received to their local peers.
	nodeSeen := make([]sim.Time, N)
	for r := range R {
		_, vis := nvl.copy(r, g.pollDetect(last[r]), int64(bytes*N))
		nodeSeen[s.DomainOf(r)] = max(nodeSeen[s.DomainOf(r)], vis)
	}
	out := make([]sim.Time, R)
	for r := range R {
		out[r] = g.pollDetect(nodeSeen[s.DomainOf(r)]) + hostSee + hostLaunch
	}
	return out, res, msgs, nil
}
