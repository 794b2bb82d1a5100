package srd

import "moebench/transport"

// What an SRD layer adds to the simulation beyond mini-gda's state, fit
// to the peak RSS of moebench run on p-h200-efa (linux/amd64, 256 to
// 1,024 ranks, 256 to 2,048 experts, 128 tokens) less mini-gda's at the
// same shape, the larger of GPU posting (deepep-v2-efa) and a proxy
// (uccl-ep-efa) at each: per LL op a message's datagram state and its
// flow's held flags, per (rank, expert) pair the flow's ordering state.
// Queues are counted per peer as mini-gda's are, which the fit assumed.
var simOp = transport.OpBytes{PerSel: 450, PerPair: 340}

var _ transport.Footprint = mechanism{}

// SimCost is the state of an SRD layer of ranks ranks: mini-gda's
// queue-per-peer count and the datagram state per op, side by side and in
// turn alike (in turn it is held for one phase; counting both keeps the
// estimate above the peak).
func (mechanism) SimCost(ranks, channels int, _ transport.Settings) transport.SimCost {
	r := int64(ranks)
	return transport.SimCost{Queues: r * r * int64(max(channels, 4)), Side: simOp, InTurn: simOp}
}
