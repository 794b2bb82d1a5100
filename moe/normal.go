package moe

import (
	"fmt"
	"moebench/hw"
	"moebench/internal/field"

	"moebench/sim"
	"moebench/transport"
)

// Normal (high-throughput) mode on one node, after DeepEP's intranode
// kernels, as one hop per destination rank (the transport takes same-node
// peers over NVLink when Env.NVLink is set); across nodes see
// internode.go:
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

// normalLaunch is normal mode's launch: num_sms SMs (DeepEP's 24 unless
// asked), one group of a block's warps each.
func normalLaunch(numSMs int) launchShape {
	return launchShape{S: normalSMsOr(numSMs), G: 1, wpg: warpsPerSM}
}

// selectionBytes is each rank's algorithm bytes as DeepEP counts them:
// every selection's token bytes.
func selectionBytes(r *Routing, tokenBytes int64) []int64 {
	per := make([]int64, r.Shape.Ranks)
	for rank := range per {
		sel := 0
		for _, x := range r.Idx[rank] {
			if x >= 0 {
				sel++
			}
		}
		per[rank] = int64(sel) * tokenBytes
	}
	return per
}

// checkPairs reports token-to-rank pairs that arrived more than once or,
// when the phase ran whole, never: a failed phase left tokens undelivered,
// so only duplicates are problems then. what names the phase.
func checkPairs(probs *problemList, seen []uint8, whole bool, what string) {
	for i, c := range seen {
		if c > 1 || (c == 0 && whole) {
			how := "never arrived"
			if c > 1 {
				how = fmt.Sprintf("arrived %d times", c)
			}
			probs.add("%s: token-to-rank pair %d %s", what, i, how)
		}
	}
}

// checkPayloads compares each rank's sum of received payloads with what
// normal dispatch sends it: each token once to every rank it selects.
func checkPayloads(probs *problemList, r *Routing, n *NormalLayout, got []uint64, what string) {
	want := make([]uint64, r.Shape.Ranks)
	for src := range want {
		for t := range r.Tokens[src] {
			for _, dst := range n.RanksOf(src, t) {
				want[dst] += Payload(src, t)
			}
		}
	}
	for rank := range want {
		if want[rank] != got[rank] {
			probs.add("%s payload checksum: rank %d received %016x, want %016x", what, rank, got[rank], want[rank])
		}
	}
}

// normalWrites is normal mode's Shape.CheckWrites.
func normalWrites(s Shape, chunk int) error {
	tb := s.NormalTokenBytes()
	if chunk > hw.MaxMsgBytes/tb {
		return field.Errorf("chunk", "%d tokens of %d B are more than the %d B one message carries (InfiniBand's largest message is 2^31 B; at most %d tokens)",
			chunk, tb, int64(hw.MaxMsgBytes), hw.MaxMsgBytes/tb)
	}
	if chunk > 0 {
		return nil
	}
	chunk = defaultChunk
	if s.Domains() > 1 {
		d, cm := NodeConfigs(s.Ranks, 0)
		chunk = max(d.RDMAChunk, cm.RDMAChunk)
	}
	if chunk > hw.MaxMsgBytes/tb {
		return field.Errorf("hidden", "%d channels make the default chunks of %d tokens of %d B more than the %d B one message carries (InfiniBand's largest message is 2^31 B; give a chunk of at most %d tokens)",
			s.Hidden, chunk, tb, int64(hw.MaxMsgBytes), hw.MaxMsgBytes/tb)
	}
	return nil
}

// normalChannels is normal mode's Channels: one per channel (num_sms/2),
// and across nodes a second per channel for the credit returns.
func normalChannels(s Shape, numSMs int) int {
	layer := max(1, normalSMsOr(numSMs)/2)
	if s.Domains() > 1 {
		layer *= 2
	}
	return layer
}

// normalBuffer is DeepEP's normal-mode buffers on num_sms/2 channels.
func normalBuffer(s Shape, numSMs int) (int64, float64, string) {
	normal := NormalBufferChannels(numSMs)
	bound := float64(normal) * float64(256*s.Domains()+288*s.DomainGPUs()) * float64(s.NormalTokenBytes())
	return NormalBufferBytes(s, normal), bound, fmt.Sprintf("DeepEP's normal-mode buffers for %d channels, %d NVLink domains × %d GPUs, hidden %d", normal, s.Domains(), s.DomainGPUs(), s.Hidden)
}

// normalRDMABytes is normal mode's RDMA buffer on channels channels: none
// on one NVLink domain.
func normalRDMABytes(s Shape, channels int) int64 {
	if s.Domains() == 1 {
		return 0
	}
	return satBytes(2*int64(channels)*int64(s.Domains())*128*int64(s.NormalTokenBytes()),
		2*float64(channels)*float64(s.Domains())*128*float64(s.NormalTokenBytes()))
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
		return runNormalDispatch(cfg, n, plan, newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU), pl, &res.Dispatch, notify)
	}, func(pl *problemList) (transport.Resources, error) {
		return runNormalCombine(cfg, n, plan, newGPUModelOn(cfg, s.Ranks, cfg.RanksPerGPU), pl, &res.Combine)
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
