package moe

import "math"

// Cost is what simulating one layer takes, estimated from its shape before
// anything is allocated, so that a command can refuse what a machine
// cannot hold.
type Cost struct {
	Bytes    int64 // peak memory of the simulation, routing included
	Messages int64 // messages dispatch and combine send, an upper bound
}

// Queues are the transport's queues over all ranks, for EstimateCost.
type Queues struct {
	QPs, Rings, DCIs int64
	Proxy            bool // a CPU proxy: descriptors per message besides the WQEs
}

// Per-item memory of the model, fit to the peak RSS of moebench run on
// linux/amd64 (ranks 16 to 256, tokens 8 to 8,192, --qps-per-peer 1 to 64,
// --rings up to 32,768 per rank, --dcis up to 10,000 per NIC, every
// transport in ll mode; normal mode takes less). Over 24 such runs the
// estimate was 0.94× to 1.9× the measured peak.
const (
	costBase       = 56 << 20  // the program, profile and tables
	costPerRank    = 256 << 10 // per-rank state: SMs, warps, NIC, timelines
	costPerSel     = 350       // a selection's routing, layout and messages
	costPerSelRank = 10        // per selection and rank: layouts indexed by peer
	costPerProxy   = 700       // per selection through a CPU proxy
	costPerQP      = 400
	costPerRing    = 1 << 10
	costPerDCI     = 400
)

// EstimateCost is the memory and messages of one layer of s on queues q.
func EstimateCost(s Shape, q Queues) Cost {
	sel := float64(s.Ranks) * float64(s.Tokens) * float64(s.TopK)
	perSel := costPerSel + costPerSelRank*float64(s.Ranks)
	if q.Proxy {
		perSel += costPerProxy
	}
	b := costBase + costPerRank*float64(s.Ranks) + sel*perSel +
		costPerQP*float64(q.QPs) + costPerRing*float64(q.Rings) + costPerDCI*float64(q.DCIs)
	return Cost{Bytes: clampInt64(b), Messages: clampInt64(2 * sel)}
}

func clampInt64(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
