package hw

import (
	"fmt"
	"math"

	"moebench/fault"
	"moebench/profile"
	"moebench/sim"
)

// Recovery is how the fabric's queues recover from lost packets: an RC
// queue's go-back-N (IBTA spec vol. 1, §9.7: a NAK when the responder sees
// a packet out of sequence, else the requester's local ACK timeout, at
// most RetryCnt retries of one packet before the queue goes into error),
// or a datagram queue's per-packet retransmission (SRD: after RTO, on
// another path, until the peer has not answered for GiveUp). Resets is
// how many times the software that owns an RC queue resets it after an
// error and posts its work again (a host proxy can; a GPU kernel
// cannot), each taking ResetTime.
type Recovery struct {
	AckTimeout sim.Time
	RetryCnt   int
	Resets     int
	ResetTime  sim.Time
	RTO        sim.Time
	GiveUp     sim.Time
}

// AckTimeout is the local ACK timeout that a QP's 5-bit timeout field
// sets: 4.096 µs × 2^exp (IBTA spec vol. 1, §9.7.6.1.3; 0 disables it).
func AckTimeout(exp int) sim.Time {
	if exp <= 0 {
		return sim.Never
	}
	return sim.Time(4096*sim.Nanosecond) << uint(exp)
}

// NewRecovery reads a profile's recovery constants: nic.ack_timeout and
// nic.retry_cnt for RC queues, efa.rto_us and efa.unresponsive_ms for
// datagram ones, proxy.qp_reset_us for a proxy's (its resets are the
// mechanism's).
func NewRecovery(p *profile.Profile) Recovery { return RecoveryOf(p.Recovery()) }

// RecoveryOf is the recovery of s on the engine's clock.
func RecoveryOf(s profile.RecoverySpec) Recovery {
	return Recovery{
		AckTimeout: AckTimeout(s.AckTimeoutExp),
		RetryCnt:   s.RetryCnt,
		ResetTime:  sim.Ns(s.QPResetNs),
		RTO:        sim.Ns(s.RTONs),
		GiveUp:     sim.Ns(s.GiveUpNs),
	}
}

// Status names, as the libraries see them: ibverbs' completion status of
// a send queue whose retries ran out, and the EFA device's for a peer
// that stopped answering (rdma-core's efa_io_defs.h, status 13, which
// libfabric's EFA provider reports as FI_EFA_ERR_ESTABLISHED_RECV_UNRESP).
const (
	StatusRetryExceeded = "IBV_WC_RETRY_EXC_ERR"
	StatusUnresponsive  = "EFA_IO_COMP_STATUS_LOCAL_ERROR_UNRESP_REMOTE"
)

// faults is a fabric's faults and the recovery state they need, kept
// apart from the healthy path: a fabric without faults has none.
type faults struct {
	plan *fault.Plan
	rec  Recovery
	fail func(*fault.Failure)
	// lossy: some packet may be lost (a loss rate or a flap).
	lossy  bool
	failed bool
	// msg is each message's state, by its slab id (grown on demand).
	msg []msgFault
	// qps is each RC queue's go-back-N state, by queueKey.
	qps map[int64]*rcQueue
	// seq numbers each queue's messages in posting order: the draws name
	// a packet by its queue and this number, never by the slab id, which
	// is reused.
	seq map[int64]uint32
	// By port (the fabric's): the share of its rate left, and the flap
	// window of its rank's link; nil when no link is degraded or flaps.
	rate  []float64
	flaps []fault.Link
	spine float64 // share of every spine link's rate (1 healthy)
}

// msgFault is one message's recovery: its number on its queue, how many
// times it has been put on the wire, where its next transmission starts
// (RC: the first packet not acknowledged; SRD: how many packets it
// resends), how many times in a row its first unacknowledged packet was
// lost, when it was first sent, and (SRD) when its delivered packets
// arrived.
type msgFault struct {
	seq     uint32
	sends   uint32
	from    int32 // RC: packets acknowledged; SRD: packets to resend (0 all)
	tries   int32
	first   sim.Time
	arrived sim.Time
}

// rcQueue is an RC queue's go-back-N state: the message whose packet is
// being recovered (-1 none), the messages sent behind it, which the
// responder drops as out of sequence and the requester sends again once
// it is through, and whether the queue is in error.
type rcQueue struct {
	blocked int32
	parked  []int32
	dead    bool
	resets  int
}

func queueKey(nic, qp int32) int64 { return int64(nic)<<idBits | int64(qp) }

// SetFaults applies plan (on the fabric's clock) to the fabric: packet
// loss on every crossing, its degraded or flapping NIC links, a congested
// spine. Lost packets are recovered as rec says, an RC queue's go-back-N
// or a datagram queue's retransmission; a queue that gives up calls fail
// (once for the fabric) and never delivers its remaining work. Call it
// after Place and before the first post; an empty plan changes nothing.
// The native engine's emulated NIC (EmuEngines) takes no faults.
func (f *Fabric) SetFaults(plan *fault.Plan, rec Recovery, fail func(*fault.Failure)) {
	if plan.Empty() {
		f.flt = nil
		return
	}
	x := &faults{plan: plan, rec: rec, fail: fail, lossy: plan.Lossy(), qps: map[int64]*rcQueue{}, seq: map[int64]uint32{}, spine: 1}
	if plan.SpineFactor > 0 {
		x.spine = plan.SpineFactor
	}
	for _, l := range plan.Links {
		if l.Rank >= len(f.NICs) {
			continue
		}
		if x.rate == nil {
			x.rate = make([]float64, len(f.ports))
			for i := range x.rate {
				x.rate[i] = 1
			}
			x.flaps = make([]fault.Link, len(f.ports))
		}
		for _, pi := range f.RankPorts(l.Rank) {
			x.rate[pi] = l.Factor
			x.flaps[pi] = l
		}
	}
	f.flt = x
}

// RankPorts are the fabric's ports (one per link, see Topology.Links) that
// rank's GPU sends and receives on, as Place lays them out: its own NICs'
// planes, or the shared NIC's when GPUs share one. A fault of a rank's
// links is a fault of these.
func (f *Fabric) RankPorts(rank int) []int {
	n := f.NICs[rank]
	ps := make([]int, f.links)
	for k := range ps {
		ps[k] = int(n.base) + k
	}
	return ps
}

// NICOf is the fabric-wide number of the physical NIC that queue qp of
// rank's NIC leaves on: link qp mod Links belongs to NIC qp mod NICs of
// the rank's, and ranks sharing a NIC share its number.
func (f *Fabric) NICOf(rank, qp int) int {
	n := f.NICs[rank]
	k := f.link(int32(qp))
	return int(n.base)/f.links*f.nics + k%f.nics
}

// numbered gives message id the next number on its queue.
func (x *faults) numbered(id int32, nic, qp int32) {
	if int(id) >= len(x.msg) {
		x.msg = append(x.msg, make([]msgFault, int(id)+1-len(x.msg))...)
	}
	k := queueKey(nic, qp)
	x.msg[id] = msgFault{seq: x.seq[k]}
	x.seq[k]++
}

// scale is the wire time w on port pi's link.
func (x *faults) scale(w sim.Time, pi int) sim.Time {
	if x.rate == nil || x.rate[pi] == 1 {
		return w
	}
	return sim.Time(math.Ceil(float64(w) / x.rate[pi]))
}

// spineTime is the wire time w on a spine link.
func (x *faults) spineTime(w sim.Time) sim.Time {
	if x.spine == 1 {
		return w
	}
	return sim.Time(math.Ceil(float64(w) / x.spine))
}

// down reports whether port pi's link is down at t.
func (x *faults) down(pi int, t sim.Time) bool {
	return x.flaps != nil && x.flaps[pi].IsDown(t)
}

// sendBytes is how many payload bytes message id's next transmission
// carries: RC resends from its first unacknowledged packet, SRD only the
// packets it lost.
func (x *faults) sendBytes(f *Fabric, id int32, m *rec) int {
	mf := &x.msg[id]
	b := int(m.bytes)
	switch {
	case mf.from == 0:
		return b
	case f.dgram:
		return min(b, int(mf.from)*f.P.MTU)
	}
	return max(0, b-int(mf.from)*f.P.MTU)
}

// resending reports whether message id was on the wire before: its
// first Sent stamp stays (the time lost to recovery shows between Sent
// and Arrived).
func (f *Fabric) resending(id int32) bool {
	return f.flt != nil && f.flt.msg[id].sends > 0
}

// packets is how many packets bytes of payload take.
func (p *NICParams) packets(bytes int) int { return max(1, (bytes+p.MTU-1)/p.MTU) }

// flight is one transmission of a message as the link models computed
// it: the ports at either end, when it started on the sender's link and
// how long it occupies it, when it arrived whole and how long the
// responder's port took, whether it crossed the spine.
type flight struct {
	src, dst       int
	start, ws      sim.Time
	arrive, wr     sim.Time
	bytes          int
	crossSpine     bool
	sender, target *NIC
}

// landed is the end of a message's transmission under faults: it draws
// the fate of each packet, then delivers the message, or starts its
// recovery, as its queue's protocol does.
func (f *Fabric) landed(e *sim.Engine, id int32, m *rec, fl flight) {
	x := f.flt
	mf := &x.msg[id]
	if mf.sends == 0 {
		mf.first = fl.start
	}
	mf.sends++
	if !f.dgram {
		f.landedRC(e, id, m, fl, mf)
		return
	}
	f.landedSRD(e, id, m, fl, mf)
}

// lost reports whether packet j (of n, in this transmission) of message
// id is lost: dropped or corrupted on a crossing, or sent or arriving
// while its link is down.
func (x *faults) lost(id int32, m *rec, fl *flight, j, n int) bool {
	if !x.lossy {
		return false
	}
	leave := fl.start + fl.ws*sim.Time(j)/sim.Time(n)
	at := fl.arrive - fl.wr*sim.Time(n-1-j)/sim.Time(n)
	if x.down(fl.src, leave) || x.down(fl.dst, at) {
		return true
	}
	mf := &x.msg[id]
	return x.plan.Lost(x.plan.PacketLoss(fl.crossSpine), uint64(m.src()), uint64(m.qp()), uint64(mf.seq), uint64(j), uint64(mf.sends))
}

// landedRC is go-back-N on an RC queue (IBTA spec vol. 1, §9.7): the
// responder accepts packets only in sequence. A lost packet followed by
// one that arrives draws an out-of-sequence NAK, which the requester has
// a fabric crossing after that packet; with nothing behind it, the
// requester waits out its local ACK timeout. It then sends again from the
// lost packet on, and every message it had sent behind it, which the
// responder dropped. RetryCnt retries of one packet in a row put the
// queue into error. (A DC initiator follows the same protocol; in error,
// software must reset it and re-target it at its next DCT, which a GPU
// kernel does not do, so it fails as an RC queue does.)
func (f *Fabric) landedRC(e *sim.Engine, id int32, m *rec, fl flight, mf *msgFault) {
	x := f.flt
	n := fl.sender
	// A queue gets recovery state at its first loss; until then it is
	// healthy and needs none.
	q := x.qps[queueKey(m.src(), m.qp())]
	if q == nil {
		q = &healthyQueue
	}
	switch {
	case q.dead:
		// Flushed: the queue is in error, its WQEs complete in error
		// and nothing reaches the responder.
		f.drop(id)
		return
	case q.blocked >= 0 && q.blocked != id:
		// Behind a lost packet: out of sequence at the responder.
		q.parked = append(q.parked, id)
		return
	}
	p := n.P
	pk := p.packets(fl.bytes)
	lostAt := -1
	for j := range pk {
		if x.lost(id, m, &fl, j, pk) {
			lostAt = j
			break
		}
	}
	if lostAt < 0 {
		mf.from, mf.tries = 0, 0
		f.stamp(m, sArrived, fl.arrive)
		e.At(fl.arrive, fl.target.id, opRx, int64(id))
		if q.blocked == id {
			q.blocked = -1
			parked := q.parked
			q.parked = nil
			for _, pid := range parked {
				n.transmit(e, pid, e.Now())
			}
		}
		return
	}
	if lostAt > 0 {
		// Progress: the packets before it were acknowledged.
		mf.tries = 0
	}
	q = x.queue(m.src(), m.qp())
	mf.from += int32(lostAt)
	mf.tries++
	wp := fl.wr / sim.Time(pk)
	arr := func(j int) sim.Time { return fl.arrive - fl.wr*sim.Time(pk-1-j)/sim.Time(pk) }
	detect := sim.Never
	for j := lostAt + 1; j < pk; j++ {
		if !x.lost(id, m, &fl, j, pk) {
			detect = arr(j) + p.Ack + p.Fabric
			break
		}
	}
	if detect == sim.Never && n.behind(m.qp()) && !x.down(fl.src, arr(lostAt)) && !x.down(fl.dst, arr(lostAt)+wp) {
		// The next message's first packet, right behind, draws the NAK.
		detect = arr(lostAt) + wp + p.Ack + p.Fabric
	}
	if detect == sim.Never {
		detect = fl.start + fl.ws*sim.Time(lostAt+1)/sim.Time(pk) + x.rec.AckTimeout
	}
	q.blocked = id
	if int(mf.tries) > x.rec.RetryCnt {
		e.At(detect, n.id, opQPError, int64(id))
		return
	}
	e.At(detect, n.id, opRetx, int64(id))
}

// behind reports whether queue qp has WQEs after the one just sent:
// posted, fetched or waiting for the link.
func (n *NIC) behind(qp int32) bool {
	i := n.qpIx[qp]
	if i <= 0 {
		return false
	}
	q := n.fab.qstate.At(i - 1)
	return q.head >= 0 || q.rdyHead >= 0 || q.dbHead >= 0 || q.rung > 0
}

// healthyQueue stands for every queue that has lost nothing yet; it is
// only read.
var healthyQueue = rcQueue{blocked: -1}

func (x *faults) queue(nic, qp int32) *rcQueue {
	k := queueKey(nic, qp)
	q := x.qps[k]
	if q == nil {
		q = &rcQueue{blocked: -1}
		x.qps[k] = q
	}
	return q
}

// qpError runs when message id's queue runs out of retries: software
// that can (a proxy) resets the queue and sends again; otherwise the
// queue is in error, reported once for the fabric, and its remaining
// work is flushed.
func (n *NIC) qpError(e *sim.Engine, id int32) {
	f := n.fab
	x := f.flt
	m := f.msgs.At(id)
	q := x.queue(m.src(), m.qp())
	mf := &x.msg[id]
	if q.resets < x.rec.Resets {
		q.resets++
		// The reset queue starts its sequence afresh: the whole WQE again.
		mf.tries, mf.from = 0, 0
		e.At(e.Now()+x.rec.ResetTime, n.id, opRetx, int64(id))
		return
	}
	q.dead = true
	retries := int(mf.tries) - 1
	if !x.failed && x.fail != nil {
		x.failed = true
		reason := fmt.Sprintf("a packet lost %d times in a row, past the retry count of %d (local ACK timeout %v)", mf.tries, x.rec.RetryCnt, x.rec.AckTimeout)
		if q.resets > 0 {
			reason += fmt.Sprintf(", after the queue was reset %d times", q.resets)
		}
		x.fail(&fault.Failure{Rank: int(m.src()), Peer: int(m.dst()), NIC: f.NICOf(int(m.src()), int(m.qp())), QP: int(m.qp()),
			At: e.Now(), Retries: retries, Status: StatusRetryExceeded, Reason: reason})
	}
	f.drop(id)
	for _, pid := range q.parked {
		f.drop(pid)
	}
	q.parked = nil
}

// landedSRD is SRD's recovery: each lost packet is sent again by itself
// once the retransmission timeout has passed, on whichever path the spray
// then picks; the message has arrived with its last packet, and nothing
// else waits for it (datagram queues deliver out of order). The adapter
// gives up on a peer that has answered nothing for GiveUp.
func (f *Fabric) landedSRD(e *sim.Engine, id int32, m *rec, fl flight, mf *msgFault) {
	x := f.flt
	n := fl.sender
	pk := n.P.packets(fl.bytes)
	lostN, lastLost := 0, sim.Time(0)
	var good sim.Time
	for j := range pk {
		if x.lost(id, m, &fl, j, pk) {
			lostN++
			lastLost = fl.start + fl.ws*sim.Time(j+1)/sim.Time(pk)
		} else {
			good = fl.arrive - fl.wr*sim.Time(pk-1-j)/sim.Time(pk)
		}
	}
	mf.arrived = max(mf.arrived, good)
	if lostN == 0 {
		mf.from = 0
		f.stamp(m, sArrived, mf.arrived)
		e.At(mf.arrived, fl.target.id, opRx, int64(id))
		return
	}
	mf.from = int32(lostN)
	mf.tries++
	at := lastLost + x.rec.RTO
	if at-mf.first > x.rec.GiveUp {
		e.At(max(e.Now(), mf.first+x.rec.GiveUp), n.id, opQPError, int64(id))
		return
	}
	e.At(at, n.id, opRetx, int64(id))
}

// datagramGiveUp reports a datagram message whose peer stopped answering.
func (n *NIC) datagramGiveUp(e *sim.Engine, id int32) {
	f := n.fab
	x := f.flt
	m := f.msgs.At(id)
	mf := &x.msg[id]
	if !x.failed && x.fail != nil {
		x.failed = true
		x.fail(&fault.Failure{Rank: int(m.src()), Peer: int(m.dst()), NIC: f.NICOf(int(m.src()), int(m.qp())), QP: int(m.qp()),
			At: e.Now(), Retries: int(mf.tries), Status: StatusUnresponsive,
			Reason: fmt.Sprintf("no packet acknowledged for %v, the unresponsive-peer timeout (retransmission timeout %v)", x.rec.GiveUp, x.rec.RTO)})
	}
	f.drop(id)
}

// retx sends message id again: the rest of it from its first lost packet
// (RC), or its lost packets (SRD), once its queue learned of the loss.
func (n *NIC) retx(e *sim.Engine, id int32) {
	x := n.fab.flt
	if !n.fab.dgram {
		m := n.fab.msgs.At(id)
		if x.queue(m.src(), m.qp()).dead {
			n.fab.drop(id)
			return
		}
	}
	n.transmit(e, id, e.Now())
}

// drop frees a message that will never be delivered nor completed.
func (f *Fabric) drop(id int32) {
	m := f.msgs.At(id)
	if m.has(fWide) {
		f.wide.Free(int32(m.off[0]))
	}
	m.issue &^= fWide
	f.msgs.Free(id)
}
