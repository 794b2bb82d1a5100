package moe

import "math"

// Cost is what simulating one layer takes, estimated from its shape before
// anything is allocated, so that a command can refuse what a machine
// cannot hold.
type Cost struct {
	Bytes int64 // peak memory of the simulation, routing included
	// InTurn is the peak with LL dispatch and combine simulated one after
	// the other (LayerConfig.InTurn) rather than side by side.
	InTurn   int64
	Messages int64 // messages dispatch and combine send, an upper bound
}

// Queues are the transport's queues over all ranks, for EstimateCost.
type Queues struct {
	QPs, Rings, DCIs int64
	Proxy            bool // a CPU proxy: descriptors per message besides the WQEs
}

// Per-item memory of the model, fit to the peak RSS of moebench run
// --transport mini-gda on linux/amd64 (ranks 16 to 1,024, tokens 128 to
// 512, ll mode; normal mode takes less): over those runs the estimate was
// 0.8x to 1.25x the measured peak. A selection's layout grows with the
// ranks up to about 256 and not beyond.
const (
	costBase        = 45 << 20  // the program, profile and tables
	costPerRank     = 256 << 10 // per-rank state: SMs, warps, NIC, timelines
	costPerSel      = 200       // a selection's routing, layout and messages
	costPerSelRank  = 2.6       // per selection and rank, up to costRankCap
	costRankCap     = 256
	costPerQP       = 250
	costPerRing     = 1 << 10
	costPerDCI      = 400
	costPerProxySel = 700 // per selection through a CPU proxy
	// The share of the rest that one phase holds at its peak: 0.52 to
	// 0.62 of the side-by-side peak measured at 512 to 2,048 ranks.
	costInTurnShare = 0.6
)

// EstimateCost is the memory and messages of one layer of s on queues q.
func EstimateCost(s Shape, q Queues) Cost {
	sel := float64(s.Ranks) * float64(s.Tokens) * float64(s.TopK)
	perSel := costPerSel + costPerSelRank*float64(min(s.Ranks, costRankCap))
	if q.Proxy {
		perSel += costPerProxySel
	}
	b := costBase + costPerRank*float64(s.Ranks) + sel*perSel +
		costPerQP*float64(q.QPs) + costPerRing*float64(q.Rings) + costPerDCI*float64(q.DCIs)
	return Cost{Bytes: clampInt64(b), InTurn: clampInt64(costBase + costInTurnShare*(b-costBase)), Messages: clampInt64(2 * sel)}
}

func clampInt64(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
