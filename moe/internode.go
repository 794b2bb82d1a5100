package moe

import (
	"fmt"
	"math/bits"
	"slices"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// Internode normal mode, after DeepEP's internode.cu (V1, legacy):
//
// Notify. Each rank sends its per-rank and per-expert counts for a node to
// the rank of its own local index there (one RDMA write per remote node),
// the node's ranks exchange them over NVLink, and the host, seeing its
// receive counts in mapped memory, launches the dispatch kernel.
//
// Dispatch. C = num_sms/2 channels, each a pair of SMs; a rank's tokens
// split into C contiguous ranges. On the sender SM of a channel, seven RDMA
// sender warps first write the channel's counts to every remote node, then
// take the channel's tokens in turn and copy each once per destination
// node (not per rank) into the RDMA send buffer for that node; a
// coordinator warp writes each node's buffer in chunks of rdma_chunk
// tokens to the rank of the same local index there (one RDMA write, then
// an atomic on the remote tail, on the channel's QP), and for the sender's
// own node only bumps the local tail. A sender waits while a node's
// receive buffer (rdma_buf tokens) is full; the remote forwarder
// coordinator returns credit with an atomic on the sender's head (on a
// second QP per channel) every rdma_chunk tokens.
//
// On the forwarder SM of the receiving rank, once the counts of every
// source node arrived, one forwarder warp per local rank of the node takes
// each arrived chunk and copies the chunk's tokens bound for its local rank
// over NVLink into that rank's buffer, nvl_chunk tokens at a time, then
// releases the NVLink tail. On the target rank, one receiver warp per
// (channel, forwarding rank) copies the tokens into recv_x. A rank is
// ready when every token bound for it arrived.
//
// Combine reverses it. Each rank's NVLink sender warps (one per local
// forwarder) send every token it received back to the forwarder of the
// token's source, in nvl_chunk batches rotating over source nodes; the
// forwarder's warps for a source node add up the node's contributions of a
// token (the NVLink reduce) into the RDMA send buffer and write chunks of
// rdma_chunk tokens, one copy per (token, node), to the source; the
// source's RDMA receiver warps add up each token's node contributions once
// all arrived, returning credit to the forwarders.
//
// Simplified: the NVLink buffers never fill (their receivers drain them at
// GPU copy speed, far above a NIC's rate), and a forwarder warp takes an
// arrived RDMA chunk whole rather than re-scanning the buffer.

// nodeConfig is DeepEP's Config for the internode kernels: chunk and
// buffer sizes in tokens.
type nodeConfig struct {
	nvlChunk, nvlBuf   int // num_max_nvl_chunked_send/recv_tokens
	rdmaChunk, rdmaBuf int // num_max_rdma_chunked_send/recv_tokens
}

// DeepEP's recommended configs by rank count (deep_ep/buffers/legacy.py
// get_dispatch_config and get_combine_config).
var (
	dispatchConfigs = map[int]nodeConfig{
		2: {24, 256, 6, 128}, 4: {6, 256, 6, 128}, 8: {6, 256, 6, 128}, 16: {36, 288, 20, 128},
		24: {32, 288, 8, 128}, 32: {32, 288, 8, 128}, 48: {32, 288, 8, 128}, 64: {32, 288, 8, 128},
		96: {20, 480, 12, 128}, 128: {20, 560, 12, 128}, 144: {32, 720, 12, 128}, 160: {28, 720, 12, 128},
	}
	combineConfigs = map[int]nodeConfig{
		2: {10, 256, 6, 128}, 4: {9, 256, 6, 128}, 8: {4, 256, 6, 128}, 16: {4, 288, 12, 128},
		24: {1, 288, 8, 128}, 32: {1, 288, 8, 128}, 48: {1, 288, 8, 128}, 64: {1, 288, 8, 128},
		96: {1, 480, 8, 128}, 128: {1, 560, 8, 128}, 144: {2, 720, 8, 128}, 160: {2, 720, 8, 128},
	}
)

// NodeConfig is what internode normal mode runs with: tokens per RDMA
// write and per NVLink batch, and the RDMA and NVLink receive buffers in
// tokens (DeepEP's Config).
type NodeConfig struct {
	RDMAChunk, NVLChunk, RDMABuf, NVLBuf int
}

// NodeConfigs is the dispatch and combine config for ranks ranks: DeepEP's
// recommended one, with chunk (when not 0) as the RDMA chunk of both.
func NodeConfigs(ranks, chunk int) (dispatch, combine NodeConfig) {
	out := [2]NodeConfig{}
	for i, c := range []bool{false, true} {
		nc := recommendedConfig(ranks, c)
		if chunk > 0 {
			nc.rdmaChunk = chunk
		}
		out[i] = NodeConfig{RDMAChunk: nc.rdmaChunk, NVLChunk: nc.nvlChunk, RDMABuf: nc.rdmaBuf, NVLBuf: nc.nvlBuf}
	}
	return out[0], out[1]
}

// recommendedConfig is DeepEP's config for ranks, or for the largest rank
// count it lists below ranks (the smallest it lists when none is).
func recommendedConfig(ranks int, combine bool) nodeConfig {
	table := dispatchConfigs
	if combine {
		table = combineConfigs
	}
	keys := make([]int, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	best := keys[0]
	for _, k := range keys {
		if k <= ranks {
			best = k
		}
	}
	return table[best]
}

// Warps of DeepEP's internode kernels.
const (
	// rdmaSenderWarps is kNumDispatchRDMASenderWarps.
	rdmaSenderWarps = 7
	// combineForwarderWarps is kNumCombineForwarderWarps: split over the
	// source nodes, at least one warp each.
	combineForwarderWarps = 24
	// maxNVLPeers bounds the GPUs per NVLink domain the model tracks per
	// token (a peerMask); DeepEP's kernels support 8, an NVL72 rack has
	// 72.
	maxNVLPeers = 128
)

// Tags of the internode control messages (tagCount marks tails).
const (
	tagMeta = int64(1) << 60 // a channel's counts for a node
	tagHead = int64(1) << 59 // credit returned to a sender; low bits index headVals
)

// nodePlan is the traffic of an internode run: per (source rank, channel,
// destination node) stream, the tokens in order with the local ranks each
// reaches there. Both phases use it.
type nodePlan struct {
	R, N, G, C int
	per        []int // per source rank: tokens per channel, ceil(T/C)
	// Stream st = (src·C + ch)·N + node holds entries sOff[st]:sOff[st+1].
	sOff  []int32
	sTok  []int32    // the token
	sMask []peerMask // local ranks of the node that receive it
	sPair []int32    // NormalLayout.RankList index of its first rank on the node
	// Pairs counts (token, node) pairs including the source's own node,
	// per source rank (DeepEP's num_rdma_token_sent).
	pairs []int64
}

func planNodes(r *Routing, n *NormalLayout, C int) *nodePlan {
	s := r.Shape
	R, N, G := s.Ranks, s.Domains(), s.DomainGPUs()
	p := &nodePlan{R: R, N: N, G: G, C: C, per: make([]int, R), sOff: make([]int32, R*C*N+1), pairs: make([]int64, R)}
	for src := range R {
		p.per[src] = max(1, (r.Tokens[src]+C-1)/C)
	}
	cnt := p.sOff[1:]
	for src := range R {
		for t := range r.Tokens[src] {
			ch := t / p.per[src]
			for _, dn := range n.NodesOf(src, t) {
				cnt[(src*C+ch)*N+int(dn)]++
				p.pairs[src]++
			}
		}
	}
	for i := 1; i < len(p.sOff); i++ {
		p.sOff[i] += p.sOff[i-1]
	}
	total := p.sOff[len(p.sOff)-1]
	p.sTok = make([]int32, total)
	p.sMask = make([]peerMask, total)
	p.sPair = make([]int32, total)
	fill := slices.Clone(p.sOff[:len(p.sOff)-1])
	for src := range R {
		for t := range r.Tokens[src] {
			ch := t / p.per[src]
			g := n.TokenStart[src] + t
			ranks := n.RanksOf(src, t)
			for j := 0; j < len(ranks); {
				dn := int(ranks[j]) / G
				st := (src*C+ch)*N + dn
				e := fill[st]
				fill[st]++
				p.sTok[e] = int32(t)
				p.sPair[e] = int32(n.RankStart[g] + j)
				for ; j < len(ranks) && int(ranks[j])/G == dn; j++ {
					p.sMask[e].set(int(ranks[j]) % G)
				}
			}
		}
	}
	return p
}

func (p *nodePlan) stream(src, ch, node int) int { return (src*p.C+ch)*p.N + node }
func (p *nodePlan) streamLen(st int) int         { return int(p.sOff[st+1] - p.sOff[st]) }

// streamSrc splits a stream index.
func (p *nodePlan) streamSrc(st int) (src, ch, node int) {
	node = st % p.N
	sc := st / p.N
	return sc / p.C, sc % p.C, node
}

// chunking numbers the chunks of every stream for one phase's chunk size:
// chunk k of stream st is cOff[st]+k and covers entries [k·size, …).
type chunking struct {
	size int
	cOff []int32
	cSt  []int32 // stream of each chunk
}

func newChunking(p *nodePlan, size int) chunking {
	c := chunking{size: size, cOff: make([]int32, len(p.sOff))}
	for st := 0; st+1 < len(p.sOff); st++ {
		n := (p.streamLen(st) + size - 1) / size
		c.cOff[st+1] = c.cOff[st] + int32(n)
	}
	c.cSt = make([]int32, c.cOff[len(c.cOff)-1])
	for st := 0; st+1 < len(c.cOff); st++ {
		for ci := c.cOff[st]; ci < c.cOff[st+1]; ci++ {
			c.cSt[ci] = int32(st)
		}
	}
	return c
}

// bounds is chunk ci's stream and entry range [lo, hi) within it.
func (c *chunking) bounds(p *nodePlan, ci int) (st, lo, hi int) {
	st = int(c.cSt[ci])
	k := ci - int(c.cOff[st])
	lo = k * c.size
	return st, lo, min(lo+c.size, p.streamLen(st))
}

// nvlModel is a warp pushing bytes to a peer GPU over NVLink, as the
// transports' NVLink path does: the warp pays nvlink.copy_ns, then streams
// at nvlink.warp_gbs, and the sending GPU's NVLink port (nvlink.gbs, its
// packets' overhead included: hw.NVLinkWireBytes) is shared by its warps
// in event order; the bytes are visible nvlink.latency_ns after the last
// leaves.
type nvlModel struct {
	warpBpp, portBpp float64
	latency, fixed   sim.Time
	portAt           []sim.Time
}

func newNVLModel(p *profile.Profile, ranks int) *nvlModel {
	return &nvlModel{warpBpp: p.Get("nvlink.warp_gbs") / 1000, portBpp: p.Get("nvlink.gbs") / 1000,
		latency: sim.Ns(p.Get("nvlink.latency_ns")), fixed: sim.Ns(p.Get("nvlink.copy_ns")), portAt: make([]sim.Time, ranks)}
}

func (n *nvlModel) copy(src int, start sim.Time, bytes int64) (done, visible sim.Time) {
	s := max(start, n.portAt[src])
	n.portAt[src] = s + bytesTime(hw.NVLinkWireBytes(bytes), n.portBpp)
	done = max(start+n.fixed+bytesTime(bytes, n.warpBpp), n.portAt[src])
	return done, done + n.latency
}

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
	pq       [][]int32
	pBusy    []bool
	pTail    []bool
	pCur     []int32
	pDiv, p0 int
	// Credit returners, one per (receiving rank, channel), each a queue of
	// head atomics posted from pool warp h0+q.
	hq    [][]int64
	hBusy []bool
	h0    int
	heads slots[headVal] // head atomics in flight
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
	b.pq = make([][]int32, nst/b.pDiv)
	b.pBusy = make([]bool, nst/b.pDiv)
	b.pTail = make([]bool, nst/b.pDiv)
	b.pCur = make([]int32, nst/b.pDiv)
	b.hq = make([][]int64, b.R*plan.C)
	b.hBusy = make([]bool, b.R*plan.C)
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
	b.pq[q] = append(b.pq[q], int32(ci))
	if !b.pBusy[q] {
		b.postNext(e, q)
	}
}

// postNext has poster q write its next ready chunk: an RDMA write (its
// tail follows in postResume), or a local tail bump on the chunk's own
// node.
func (b *nodeBase) postNext(e *sim.Engine, q int) {
	if len(b.pq[q]) == 0 {
		b.pBusy[q] = false
		return
	}
	b.pBusy[q] = true
	ci := int(b.pq[q][0])
	b.pq[q] = b.pq[q][1:]
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
	b.hq[q] = append(b.hq[q], tag)
	if !b.hBusy[q] {
		b.headNext(e, q)
	}
}

// headNext posts credit returner q's next head atomic.
func (b *nodeBase) headNext(e *sim.Engine, q int) {
	if len(b.hq[q]) == 0 {
		b.hBusy[q] = false
		return
	}
	b.hBusy[q] = true
	tag := b.hq[q][0]
	b.hq[q] = b.hq[q][1:]
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

// deepepTokenBytes is the per-(token, node) size DeepEP's internode test
// counts: the hidden vector in the dispatch type plus its FP8 or NVFP4
// scales (dispatch), hidden × combine bytes (combine).
func deepepTokenBytes(s Shape, combine bool) int64 {
	if combine {
		return int64(s.Hidden * s.Combine.Bytes())
	}
	return int64(s.DispatchVectorBytes())
}

// NormalCombineTokenBytes is the per-token size of internode combine
// buffers: align16(hidden × combine bytes + 8 B source meta + top-k
// float32 weights), DeepEP's get_num_bytes_per_token with no scales or
// ids. 14,384 B at hidden 7,168 BF16 top-8.
func (s Shape) NormalCombineTokenBytes() int {
	n := s.Hidden*s.Combine.Bytes() + SourceMetaBytes + s.TopK*TopKWeightBytes
	return (n + normalAlignment - 1) / normalAlignment * normalAlignment
}

// peerMask is a set of a domain's local ranks (up to maxNVLPeers).
type peerMask [maxNVLPeers / 64]uint64

func (m *peerMask) set(j int)      { m[j>>6] |= 1 << (j & 63) }
func (m *peerMask) has(j int) bool { return m[j>>6]&(1<<(j&63)) != 0 }
func (m *peerMask) or(o *peerMask) {
	for i := range m {
		m[i] |= o[i]
	}
}
func (m *peerMask) empty() bool { return *m == peerMask{} }

// count is how many ranks m holds.
func (m *peerMask) count() int {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}

// below is how many ranks m holds below j.
func (m *peerMask) below(j int) int {
	n := 0
	for i := range j >> 6 {
		n += bits.OnesCount64(m[i])
	}
	return n + bits.OnesCount64(m[j>>6]&(1<<(j&63)-1))
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

// validateNodes reports what internode normal mode cannot run: DeepEP's
// internode kernels forward inside an NVLink domain over NVLink only, and
// assert that an RDMA chunk fits twice in the receive buffer.
func (c *LayerConfig) validateNodes() error {
	s := c.Routing.Shape
	if s.Domains() < 2 {
		return nil
	}
	switch {
	case !c.NVLink:
		return field.Errorf("nvlink", "normal mode across nodes forwards inside each node over NVLink (DeepEP's internode kernels need it); it cannot run with NVLink off")
	case s.DomainGPUs() > maxNVLPeers:
		return fmt.Errorf("nvlink domain: %d GPUs, internode normal mode models at most %d a domain (DeepEP's kernels support 8)", s.DomainGPUs(), maxNVLPeers)
	}
	for _, combine := range []bool{false, true} {
		if nc := recommendedConfig(s.Ranks, combine); c.Chunk > nc.rdmaBuf/2 {
			return field.Errorf("chunk", "%d tokens per RDMA write exceed half the %d-token RDMA receive buffer (DeepEP asserts chunk <= buffer/2)", c.Chunk, nc.rdmaBuf)
		}
	}
	return nil
}

// runNodes runs internode normal mode: notify, dispatch, combine.
func runNodes(cfg *LayerConfig, res *Result) error {
	s := cfg.Routing.Shape
	C := max(1, normalSMsOr(cfg.NumSMs)/2)
	res.NumSMs = normalSMsOr(cfg.NumSMs)
	n := cfg.Routing.Normal()
	plan := planNodes(cfg.Routing, n, C)
	var probs problemList
	g := newGPUModel(cfg, s.Ranks)
	notify, r0, nmsgs, err := runNotifyNodes(cfg, &res.Dispatch, g)
	if err != nil {
		return err
	}
	r1, r2, err := runPhases(cfg.InTurn, &probs, func(pl *problemList) (transport.Resources, error) {
		if notify == nil {
			return r0, nil // the notify step failed: dispatch never launched
		}
		return runNodeDispatch(cfg, n, plan, newGPUModel(cfg, s.Ranks), pl, &res.Dispatch, notify)
	}, func(pl *problemList) (transport.Resources, error) {
		return runNodeCombine(cfg, n, plan, newGPUModel(cfg, s.Ranks), pl, &res.Combine)
	})
	if err != nil {
		return err
	}
	res.Dispatch.Messages += nmsgs
	res.Events = res.Dispatch.Events + res.Combine.Events
	res.Resources = Resources{Resources: r0.Max(r1).Max(r2), BufferBytesPerRank: NormalBufferBytes(s, C)}
	res.Problems, res.ProblemCount = probs.out(), probs.n
	return nil
}
