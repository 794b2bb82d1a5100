package moe

import (
	"slices"

	"moebench/internal/hugepage"
)

// Locality is where a selection goes relative to its source rank, which
// decides the path: a local copy, NVLink, or the network.
type Locality uint8

// Localities, in increasing distance.
const (
	SameRank Locality = iota
	SameNode          // the same NVLink domain: the node, or a rack NVLink spans
	Remote
	numLocalities
)

// String names the locality.
func (l Locality) String() string {
	switch l {
	case SameRank:
		return "same-rank"
	case SameNode:
		return "same-node"
	case Remote:
		return "remote"
	}
	return "Locality(?)"
}

// LocalityOf classifies a transfer from rank src to rank dst.
func (s Shape) LocalityOf(src, dst int) Locality {
	switch {
	case src == dst:
		return SameRank
	case s.DomainOf(src) == s.DomainOf(dst):
		return SameNode
	}
	return Remote
}

// Load summarizes a per-rank or per-expert load vector.
type Load struct {
	Max       int64   // the largest load
	ArgMax    int     // the first rank or expert carrying Max
	Mean      float64 // mean load
	Imbalance float64 // Max / Mean; 0 when nothing is loaded
}

func loadOf(v []int64) Load {
	var l Load
	var sum int64
	for i, x := range v {
		sum += x
		if x > l.Max {
			l.Max, l.ArgMax = x, i
		}
	}
	if len(v) > 0 {
		l.Mean = float64(sum) / float64(len(v))
	}
	if l.Mean > 0 {
		l.Imbalance = float64(l.Max) / l.Mean
	}
	return l
}

// LLMessage is one low-latency dispatch write: one token to one selected
// expert. Combine sends the same set back in reverse.
type LLMessage struct {
	Token       int32 // token index on the source rank
	Slot        int32 // top-k slot of the selection
	DstRank     int32 // rank hosting the expert
	LocalExpert int32 // expert index on DstRank
	// RecvSlot is the message's slot in the receiver's
	// [LocalExpert][source rank][Tokens] buffer: the token's position among
	// the source's tokens for that expert, in token order.
	RecvSlot int32
}

// Expert is the physical expert id of m under shape s.
func (m LLMessage) Expert(s Shape) int { return int(m.DstRank)*s.LocalExperts() + int(m.LocalExpert) }

// LLLayout is the low-latency mode traffic of a routing: one message per
// valid selection, never deduplicated, as DeepEP's LL kernels send it.
type LLLayout struct {
	Shape Shape
	// Msgs holds every message, grouped by source rank in (token, slot)
	// order; source r's are Msgs[Start[r]:Start[r+1]].
	Msgs  []LLMessage
	Start []int
	// Counts[src*Physical()+p] is the number of messages source src sends to
	// physical expert p, i.e. [src][dst rank][local expert] with contiguous
	// placement.
	Counts        []int32
	RecvPerRank   []int64 // messages received by each rank
	RecvPerExpert []int64 // messages received by each physical expert
	// ByLocality counts messages by Locality.
	ByLocality [numLocalities]int64
}

// LL computes the low-latency layout in one pass over the routing.
func (r *Routing) LL() *LLLayout {
	s := r.Shape
	k, phys, nl := s.TopK, s.Physical(), s.LocalExperts()
	total := 0
	for _, row := range r.Idx {
		total += len(row)
	}
	l := &LLLayout{
		Shape:         s,
		Msgs:          make([]LLMessage, 0, total),
		Start:         make([]int, s.Ranks+1),
		Counts:        make([]int32, s.Ranks*phys),
		RecvPerRank:   make([]int64, s.Ranks),
		RecvPerExpert: make([]int64, phys),
	}
	for src, row := range r.Idx {
		l.Start[src] = len(l.Msgs)
		counts := l.Counts[src*phys : (src+1)*phys]
		for i, e := range row {
			if e < 0 {
				continue
			}
			dst := int(e) / nl
			l.Msgs = append(l.Msgs, LLMessage{
				Token:       int32(i / k),
				Slot:        int32(i % k),
				DstRank:     int32(dst),
				LocalExpert: int32(int(e) % nl),
				RecvSlot:    counts[e],
			})
			counts[e]++
			l.RecvPerRank[dst]++
			l.RecvPerExpert[e]++
			l.ByLocality[s.LocalityOf(src, dst)]++
		}
	}
	l.Start[s.Ranks] = len(l.Msgs)
	return l
}

// From returns the messages source rank src sends.
func (l *LLLayout) From(src int) []LLMessage { return l.Msgs[l.Start[src]:l.Start[src+1]] }

// LLBlocks indexes a layout by receive block, the messages physical
// expert p received from source src: Msg[Off[p·Ranks+src]+slot] is the
// index in Msgs of the message at that RecvSlot. Combine walks the blocks
// to send tokens back and the dispatch check finds a slot's token through
// them, so one table serves both: 4 bytes a (rank, expert) pair and 4 a
// message.
type LLBlocks struct {
	Off []int32 // Physical()·Ranks + 1 offsets into Msg
	Msg []int32
}

// Blocks builds the layout's block index.
func (l *LLLayout) Blocks() LLBlocks {
	s := l.Shape
	R, phys := s.Ranks, s.Physical()
	b := LLBlocks{Off: hugepage.Make[int32](phys*R + 1), Msg: make([]int32, len(l.Msgs))}
	for src := range R {
		for p := range phys {
			b.Off[p*R+src+1] = l.Counts[src*phys+p]
		}
	}
	for i := 1; i < len(b.Off); i++ {
		b.Off[i] += b.Off[i-1]
	}
	nl := s.LocalExperts()
	for src := range R {
		for i := l.Start[src]; i < l.Start[src+1]; i++ {
			m := &l.Msgs[i]
			p := int(m.DstRank)*nl + int(m.LocalExpert)
			b.Msg[int(b.Off[p*R+src])+int(m.RecvSlot)] = int32(i)
		}
	}
	return b
}

// Count is the number of messages src sends to local expert le of rank dst:
// the value DeepEP's sender adds to the receiver's count[le][src].
func (l *LLLayout) Count(src, dst, le int) int {
	return int(l.Counts[src*l.Shape.Physical()+dst*l.Shape.LocalExperts()+le])
}

// RecvRange is where source src's tokens land in physical expert p's packed
// output (DeepEP's packed_recv_layout_range): sources in rank order, each
// contiguous, so begin is the sum of lower sources' counts.
func (l *LLLayout) RecvRange(p, src int) (begin, count int) {
	phys := l.Shape.Physical()
	for s := range src {
		begin += int(l.Counts[s*phys+p])
	}
	return begin, int(l.Counts[src*phys+p])
}

// RankLoad summarizes messages received per rank.
func (l *LLLayout) RankLoad() Load { return loadOf(l.RecvPerRank) }

// ExpertLoad summarizes messages received per physical expert.
func (l *LLLayout) ExpertLoad() Load { return loadOf(l.RecvPerExpert) }

// NormalLayout is the normal (high-throughput) mode traffic of a routing,
// as DeepEP's get_dispatch_layout derives it: a token goes to each rank
// that hosts any of its experts once, and crosses the network once per
// destination node. A node here is an NVLink domain (Shape.Domains):
// DeepEP's RDMA rank. Flat arrays are indexed [src][...] row-major.
type NormalLayout struct {
	Shape Shape
	// TokensPerRank[src*Ranks+dst]: distinct tokens src sends to dst
	// (num_tokens_per_rank).
	TokensPerRank []int32
	// TokensPerNode[src*Domains()+node]: distinct tokens src sends to node
	// (num_tokens_per_rdma_rank).
	TokensPerNode []int32
	// TokensPerExpert[src*Physical()+p]: tokens src sends to expert p
	// (num_tokens_per_expert).
	TokensPerExpert []int32
	// is_token_in_rank in sparse form, O(selections) instead of
	// O(tokens×ranks): token t of source src is global token
	// g = TokenStart[src]+t, and its destination ranks, ascending, are
	// RankList[RankStart[g]:RankStart[g+1]]; its destination nodes likewise
	// NodeList[NodeStart[g]:NodeStart[g+1]].
	TokenStart []int
	RankStart  []int
	RankList   []int32
	NodeStart  []int
	NodeList   []int32
	// RecvPerRank is the distinct tokens each rank receives.
	RecvPerRank []int64
	// ByLocality counts distinct (token, destination rank) pairs.
	ByLocality [numLocalities]int64
	// RemoteNodeSends counts distinct (token, destination node) pairs off
	// the source's node: the RDMA transfers of internode dispatch.
	RemoteNodeSends int64
}

// Normal computes the normal-mode layout in one pass over the routing.
func (r *Routing) Normal() *NormalLayout {
	s := r.Shape
	k, phys, nl, nodes := s.TopK, s.Physical(), s.LocalExperts(), s.Domains()
	total, tokens := 0, 0
	for rank, row := range r.Idx {
		total += len(row)
		tokens += r.Tokens[rank]
	}
	n := &NormalLayout{
		Shape:           s,
		TokensPerRank:   make([]int32, s.Ranks*s.Ranks),
		TokensPerNode:   make([]int32, s.Ranks*nodes),
		TokensPerExpert: make([]int32, s.Ranks*phys),
		TokenStart:      make([]int, s.Ranks+1),
		RankStart:       make([]int, tokens+1),
		RankList:        make([]int32, 0, total),
		NodeStart:       make([]int, tokens+1),
		NodeList:        make([]int32, 0, total),
		RecvPerRank:     make([]int64, s.Ranks),
	}
	// seen[dst] == stamp: dst already counted for the current token.
	seen := make([]uint32, s.Ranks)
	var stamp uint32
	g := 0
	for src, row := range r.Idx {
		n.TokenStart[src] = g
		srcNode := s.DomainOf(src)
		perRank := n.TokensPerRank[src*s.Ranks : (src+1)*s.Ranks]
		perNode := n.TokensPerNode[src*nodes : (src+1)*nodes]
		perExpert := n.TokensPerExpert[src*phys : (src+1)*phys]
		for t := range r.Tokens[src] {
			stamp++
			first := len(n.RankList)
			for _, e := range row[t*k : t*k+k] {
				if e < 0 {
					continue
				}
				perExpert[e]++
				dst := int(e) / nl
				if seen[dst] != stamp {
					seen[dst] = stamp
					n.RankList = append(n.RankList, int32(dst))
				}
			}
			ranks := n.RankList[first:]
			slices.Sort(ranks)
			lastNode := int32(-1)
			for _, dst := range ranks {
				perRank[dst]++
				n.RecvPerRank[dst]++
				n.ByLocality[s.LocalityOf(src, int(dst))]++
				// Ranks are ascending, so a node's ranks are adjacent.
				if node := int32(s.DomainOf(int(dst))); node != lastNode {
					lastNode = node
					n.NodeList = append(n.NodeList, node)
					perNode[node]++
					if int(node) != srcNode {
						n.RemoteNodeSends++
					}
				}
			}
			g++
			n.RankStart[g] = len(n.RankList)
			n.NodeStart[g] = len(n.NodeList)
		}
	}
	n.TokenStart[s.Ranks] = g
	return n
}

// RanksOf lists the destination ranks of token t of source src, ascending.
func (n *NormalLayout) RanksOf(src, t int) []int32 {
	g := n.TokenStart[src] + t
	return n.RankList[n.RankStart[g]:n.RankStart[g+1]]
}

// NodesOf lists the destination nodes of token t of source src, ascending.
func (n *NormalLayout) NodesOf(src, t int) []int32 {
	g := n.TokenStart[src] + t
	return n.NodeList[n.NodeStart[g]:n.NodeStart[g+1]]
}

// InRank reports is_token_in_rank[t][dst] for source src.
func (n *NormalLayout) InRank(src, t, dst int) bool {
	return slices.Contains(n.RanksOf(src, t), int32(dst))
}

// RankLoad summarizes distinct tokens received per rank.
func (n *NormalLayout) RankLoad() Load { return loadOf(n.RecvPerRank) }
