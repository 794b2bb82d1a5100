package hw

import "moebench/sim"

// Datagram makes every queue of the fabric a reliable datagram one, as
// EFA's Scalable Reliable Datagram queues are: a queue serves every peer,
// each WQE naming its destination's address handle, so the context caches
// hold one entry per peer (an address handle at the requester, the peer's
// state at the responder) rather than one per queue; WQEs of one queue
// leave in the order their payloads are read, not in posting order; and,
// with two tiers and paths above 1, a message's packets (link.mtu_b each)
// spray over up to paths spines, each packet taking the candidate whose
// links free first, the message arriving with its last packet. Call it
// before the first post; with it off the fabric is exactly as before.
func (f *Fabric) Datagram(paths int) {
	f.dgram, f.paths = true, max(1, paths)
}

// spray sends a datagram message between leaves packet by packet: each
// packet leaves the sender's link right behind the one before it, crosses
// the spine of its own choice among the flow's candidates, and queues at
// the responder's port; the message has arrived with its last packet. A
// backed-up first hop stalls the sender's link as crossLeaf's does.
func (n *NIC) spray(e *sim.Engine, id int32, m *rec, dst *NIC, slot sim.Time, ph, dp *port, bytes int) {
	p := n.P
	f := n.fab
	t := &p.Topo
	half := p.Fabric / 2
	s0 := f.sprayPath(n, dst, m, 0, ph.leaf, dp.leaf)
	start := max(slot+p.Tx, ph.linkAt, dp.portAt-p.PortBuffer-p.Fabric-2*t.Hop,
		f.up[int(ph.leaf)*f.spines+s0]-t.HopBuffer-half, f.down[s0*f.leaves+int(dp.leaf)]-t.HopBuffer-half-t.Hop)
	if !f.resending(id) {
		m.set(fMsgRate, rateBound(m, slot, start, p))
		f.stamp(m, sSent, start)
	}
	left := bytes
	at := start
	var arrive sim.Time
	x := f.flt
	k := f.link(m.qp())
	for i := 0; ; i++ {
		b := min(left, p.MTU)
		w := p.WireTime(b)
		// Each link's time for the packet (its own rate under faults).
		ws, wu, wr := w, w, w
		if x != nil {
			ws, wu, wr = x.scale(w, int(n.base)+k), x.spineTime(w), x.scale(w, int(dst.base)+k)
		}
		s := s0
		if i > 0 {
			s = f.sprayPath(n, dst, m, i, ph.leaf, dp.leaf)
		}
		up := &f.up[int(ph.leaf)*f.spines+s]
		down := &f.down[s*f.leaves+int(dp.leaf)]
		s1 := max(at+half, *up)
		*up = max(s1+wu, at+half+ws)
		s2 := max(s1+t.Hop, *down)
		*down = max(s2+wu, *up+t.Hop)
		arrive = max(max(s2+t.Hop+p.Fabric-half, dp.portAt)+wr, *down+t.Hop+p.Fabric-half)
		dp.portAt = arrive
		at += ws
		left -= b
		if left <= 0 {
			break
		}
	}
	ph.linkAt = at
	if x != nil {
		// Packet by packet the fate is drawn over the whole message's
		// span (its packets' spread over paths is not kept apart).
		f.landed(e, id, m, flight{src: int(n.base) + k, dst: int(dst.base) + k, start: start, ws: at - start, arrive: arrive,
			wr: at - start, bytes: bytes, crossSpine: true, sender: n, target: dst})
		return
	}
	f.stamp(m, sArrived, arrive)
	e.At(arrive, dst.id, opRx, int64(id))
}

// sprayPath is the spine packet i of message m takes: of the flow's paths
// candidates (consecutive spines from its hash), the one whose uplink and
// downlink free first.
func (f *Fabric) sprayPath(n, dst *NIC, m *rec, i int, leaf, dleaf int32) int {
	h := uint64(n.Index)<<40 ^ uint64(dst.Index)<<20 ^ uint64(uint32(m.qp()))
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	first := int(h % uint64(f.spines))
	k := min(f.paths, f.spines)
	best, at := first, sim.Never
	for j := range k {
		// Rotate the candidates by packet so that ties spread.
		s := (first + (i+j)%k) % f.spines
		if t := max(f.up[int(leaf)*f.spines+s], f.down[s*f.leaves+int(dleaf)]); t < at {
			best, at = s, t
		}
	}
	return best
}
