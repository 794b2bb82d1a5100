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
