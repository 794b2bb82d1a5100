package moe

import (
	"math"

	"moebench/transport"
)

// Cost is what simulating one layer takes, estimated from its shape before
// anything is allocated, so that a command can refuse what a machine
// cannot hold.
type Cost struct {
	Bytes int64 // peak memory of the simulation, routing included
	// InTurn is the peak with LL dispatch and combine simulated one after
	// the other (LayerConfig.InTurn) rather than side by side; Bytes where
	// that saves nothing (normal mode, LL layers of few ranks).
	InTurn int64
	// Messages is what dispatch and combine deliver, an upper bound: a
	// message per selection and, in LL mode, a count and a flag per
	// (rank, expert) pair, which outnumber the selections past a few
	// hundred experts.
	Messages int64
}

// Per-item memory of the model in normal mode, fit to the peak RSS of
// moebench run --transport mini-gda on linux/amd64 and kept above the
// peaks of normal layers side by side (128 and 256 ranks x 4,096 tokens
// on p-roce: 1.2x to 1.4x). Normal mode never runs in turn, so its
// estimate in turn is the same.
const (
	costBase    = 32 << 20  // the program, profile and tables
	costPerRank = 448 << 10 // per-rank state: SMs, NIC, timelines
	costPerWarp = 130       // a sending warp of either phase and its post
	costPerPair = 460       // a (rank, expert) pair
	costPerSel  = 210       // a selection's routing, layout and messages
	costPerQP   = 20        // a send queue's GPU and NIC counters
	// costSMs is the GPU the launch shape assumes (an H100 or H200).
	costSMs = 132
)

// llCosts are the bytes an LL layer's peak takes per item. At its peak an
// LL phase holds a message, events, a queue's state, a post and per-pair
// table entries for every (rank, expert) pair at once (each rank posts its
// counts or flags within a microsecond and the NICs drain them over
// hundreds), so pairs, warps and selections are the terms, and peers what
// grows with the ranks squared whatever the experts. The coefficients
// solve a linear program over the peak RSS of moebench run --transport
// mini-gda on linux/amd64 (16 to 8,192 ranks, one to sixteen experts a
// rank, 128 and 511 tokens; the 8,192-rank layer on a 16-core host, the
// rest on a 2-core one): every estimate at least a margin over its peak,
// the largest ratio as small as it can be. Away from those points it can
// fall short where a few ranks hold many experts and tokens each (0.85x
// at 16 ranks x 256 experts x 511 tokens; TestEstimateCost). In turn has
// its own terms: one share of side by side was 1.0x the peak at 512 ranks
// but 1.36x at 4,096.
type llCosts struct {
	fixed                             float64 // bytes
	perWarp, perPair, perPeer, perSel float64
}

// llSide is fit side by side, each estimate at least 1.10x its peak (a
// side-by-side peak moves with when the collector last ran; 1.10x to
// 1.27x); llInTurn in turn, at least 1.05x (1.05x to 1.23x, and 1.05x
// from 4,096 ranks up). Each point's peak is the largest of up to four
// runs.
var (
	llSide   = llCosts{fixed: 40 << 20, perWarp: 152, perPair: 487, perSel: 396}
	llInTurn = llCosts{fixed: 144 << 20, perPair: 251, perPeer: 25, perSel: 214}
)

func (c llCosts) bytes(r, warps, pairs, sel float64) float64 {
	return c.fixed + c.perWarp*warps + c.perPair*pairs + c.perPeer*r*r + c.perSel*sel
}

// EstimateCost is the memory and messages of one layer of s in mode on a
// mechanism whose state costs q (transport.CostOf): its queues, its
// other state, and what it keeps per LL operation (a CPU proxy's
// records, fit the same way).
func EstimateCost(s Shape, mode Mode, q transport.SimCost) Cost {
	r := float64(s.Ranks)
	sel := r * float64(s.Tokens) * float64(s.TopK)
	pairs := r * float64(s.Physical())
	var warps float64
	if s.Physical() > 0 {
		l := llLaunch(s, 0, costSMs)
		warps = r * float64(l.S*max(s.TopK, l.G))
	}
	return mode.spec().cost(costIn{s: s, q: q, r: r, sel: sel, pairs: pairs, warps: warps, msgs: clampInt64(2 * (sel + pairs))})
}

// costIn is what EstimateCost's modes price: the shape, the mechanism's
// state, and the ranks, selections, (rank, expert) pairs, LL warps and
// messages of the layer.
type costIn struct {
	s                    Shape
	q                    transport.SimCost
	r, sel, pairs, warps float64
	msgs                 int64
}

// normalCost is EstimateCost in normal mode: one fit, side by side or in
// turn.
func normalCost(in costIn) Cost {
	// A proxy's records are per op, and normal mode's ops are chunks:
	// 128 ranks x 4,096 tokens peaked 9 MiB above mini-gda's.
	b := clampInt64(costBase + costPerRank*in.r + costPerWarp*in.warps + costPerPair*in.pairs + costPerSel*in.sel + costPerQP*float64(in.q.Queues) + in.q.Bytes)
	return Cost{Bytes: b, InTurn: b, Messages: in.msgs}
}

// llCost is EstimateCost in LL mode, whose mechanisms may keep state per
// operation.
func llCost(in costIn) Cost {
	s, q, r, sel, pairs, warps := in.s, in.q, in.r, in.sel, in.pairs, in.warps
	queues := q.Bytes
	// The fit's layers ran on their presets' queues, counted by the
	// callers as the larger of the local experts and four a peer; queues
	// a knob adds beyond those cost their counters each.
	queues += costPerQP * max(0, float64(q.Queues)-r*max(float64(s.Physical()), 4*r))
	side := llSide.bytes(r, warps, pairs, sel) + queues
	turn := llInTurn.bytes(r, warps, pairs, sel) + queues
	if q.Side != (transport.OpBytes{}) {
		side += q.Side.PerPair*pairs + q.Side.PerSel*sel
	}
	if q.InTurn != (transport.OpBytes{}) {
		turn += q.InTurn.PerPair*pairs + q.InTurn.PerSel*sel
	}
	// Below a few hundred ranks in turn saves nothing: its fixed share is
	// larger, and a 64-rank layer peaked at 69-100 MiB in turn against
	// 55-58 MiB side by side. Such a layer never runs in turn.
	return Cost{Bytes: clampInt64(side), InTurn: clampInt64(min(turn, side)), Messages: in.msgs}
}

func clampInt64(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
