package moe

import "math"

// Cost is what simulating one layer takes, estimated from its shape before
// anything is allocated, so that a command can refuse what a machine
// cannot hold.
type Cost struct {
	Bytes int64 // peak memory of the simulation, routing included
	// InTurn is the peak with LL dispatch and combine simulated one after
	// the other (LayerConfig.InTurn) rather than side by side.
	InTurn int64
	// Messages is what dispatch and combine deliver, an upper bound: a
	// message per selection and, in LL mode, a count and a flag per
	// (rank, expert) pair, which outnumber the selections past a few
	// hundred experts.
	Messages int64
}

// Queues are the transport's queues over all ranks, for EstimateCost.
type Queues struct {
	QPs, Rings, DCIs int64
	Proxy            bool // a CPU proxy: descriptors per message besides the WQEs
}

// Per-item memory of the model, fit to the peak RSS of moebench run
// --transport mini-gda on linux/amd64 (ranks 16 to 4,096 on a 2-core
// machine and 8,192 on a 16-core one, with max(256, ranks) experts,
// tokens 128 and 512, ll mode, plus 256 ranks through the proxy, over DC
// and in normal mode). The fit is kept above the peaks rather than
// refit to each build: the bytes a pair needs grow with the ranks (about
// 100 at 512, 300 at 4,096), so a lower figure fit to the smaller runs
// would admit a large run that does not fit. Past 256 experts a rank's
// LL warps and its (rank, expert) pairs (a count and a flag each, their
// messages, events, queue pairs and posts) outgrow everything else. A
// selection costs about 210 bytes: 112, fit where pairs dominate, was
// 0.68x to 0.84x of LL layers of 1,024 to 2,048 tokens a rank. A send
// queue's dense GPU and NIC counters are 20 bytes whatever else the fit
// says. Through mini-proxy the extra terms are fit the same way (64 to
// 2,048 ranks, 128 to 2,048 tokens): the estimate is 1.0x to 1.6x the
// peaks.
const (
	costBase    = 32 << 20  // the program, profile and tables
	costPerRank = 448 << 10 // per-rank state: SMs, NIC, timelines
	costPerWarp = 130       // a sending warp of either phase and its post
	costPerPair = 460       // a (rank, expert) pair: its count and flag
	costPerSel  = 210       // a selection's routing, layout and messages
	costPerQP   = 20        // a send queue's GPU and NIC counters
	costPerRing = 1 << 10
	costPerDCI  = 400
	// Through a CPU proxy each op also has a record, a producer while it
	// waits for ring space and a share of a worker's send queues.
	costPerProxySel  = 250 // per selection
	costPerProxyPair = 50  // per (rank, expert) pair
	// costSMs is the GPU the launch shape assumes (an H100 or H200).
	costSMs = 132
	// The share of the rest that one phase holds at its peak, measured in
	// turn at 512 to 8,192 ranks (the estimate is 0.86x to 1.13x of those
	// runs, 0.99x at 4,096 and 8,192).
	costInTurnShare = 0.52
)

// EstimateCost is the memory and messages of one layer of s on queues q.
func EstimateCost(s Shape, q Queues) Cost {
	r := float64(s.Ranks)
	sel := r * float64(s.Tokens) * float64(s.TopK)
	perSel, perPair := float64(costPerSel), float64(costPerPair)
	if q.Proxy {
		perSel += costPerProxySel
		perPair += costPerProxyPair
	}
	var warps float64
	if s.Physical() > 0 {
		l := llLaunch(s, 0, costSMs)
		warps = r * float64(l.S*max(s.TopK, l.G))
	}
	b := costBase + costPerRank*r + costPerWarp*warps + perPair*r*float64(s.Physical()) + sel*perSel +
		costPerQP*float64(q.QPs) + costPerRing*float64(q.Rings) + costPerDCI*float64(q.DCIs)
	return Cost{Bytes: clampInt64(b), InTurn: clampInt64(costBase + costInTurnShare*(b-costBase)), Messages: clampInt64(2 * (sel + r*float64(s.Physical())))}
}

func clampInt64(v float64) int64 {
	if v >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}
