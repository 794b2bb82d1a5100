package hw

import (
	"fmt"
	"math"
	"unsafe"

	"moebench/internal/prefetch"
	"moebench/sim"
)

// Msg is one work request as a requester builds it and as the NIC's reports
// return it. The fabric keeps it in a 64-byte record (rec); Fabric.Msg and
// SetMsg read and write it whole.
type Msg struct {
	// The requester's own, carried for it so that it keeps no record per
	// message: a tag, when the GPU began issuing the WQE (the base of its
	// timeline; the end is set with SetIssueEnd), the workload's channel
	// (and Flush below).
	Issue   sim.Time
	Tag     int64
	Channel int32
	QP      int32
	Dst     int32 // destination NIC index in the fabric
	Src     int32 // requester NIC index
	Bytes   int32 // payload bytes on the wire
	BBs     int32 // 64 B basic blocks of the WQE
	WQE     int32 // the transport's index of this WQE in its queue
	Pointer bool  // payload named by pointer: the NIC reads it by DMA
	Atomic  bool  // an 8 B fetch-add, executed by the responder NIC
	// Unsignaled WQEs produce no CQE of their own: a later signaled one on
	// the same QP retires them (§3.3).
	Unsignaled bool
	// DC: sent on a DCI to a DCT. The connection contexts the requester
	// and the responder need in their caches follow from it: an RC
	// message's QP at both ends, a DC message's DCI and one of the
	// responder's DCTs (Fabric.SetDCTs).
	DC    bool
	Flush bool // the requester's: the op flushed its queue
	NIC   bool // the requester's: the op asked for the NIC (transport.Op.NIC)
}

// Limits of the packed record: NICs and queues per NIC are 20-bit indices,
// a channel 16 bits, a WQE at most 65,535 basic blocks, a message's issue
// time below 2^55 ps (10 hours).
const (
	MaxNICs    = 1 << idBits
	MaxQPs     = 1 << idBits
	MaxChannel = 1<<16 - 1
	MaxBBs     = 1<<16 - 1
	maxIssue   = 1<<issueBits - 1
)

// MaxMsgBytes is the largest payload one message carries: InfiniBand's
// largest message is 2^31 B (IBTA spec vol. 1, §9.4), and a record keeps
// the size in 32 signed bits, one byte less.
const MaxMsgBytes = math.MaxInt32

// rec is a message as the fabric stores it. A layer of thousands of ranks
// holds tens of millions in flight at once, so it fills one cache line:
// its timeline is 32-bit offsets from the issue time (4.29 ms of
// picoseconds), moved exactly to the fabric's wide table in the rare
// message that outgrows them; the two waits are counts of their fixed
// costs; indices and flags are packed.
type rec struct {
	issue uint64 // issue time | flags<<issueBits
	tag   int64
	ends  uint64 // src | dst<<idBits | qp<<2·idBits | refs<<60 | conn misses<<62
	// off holds the timeline's stamps as offsets from the issue time;
	// while wide, off[0] is the wide table's slot.
	off   [nStamps]uint32
	bytes int32
	wqe   int32
	next  int32  // the next message in its QP's ring, or -1
	misc  uint32 // channel | BBs<<16
}

const (
	issueBits = 55
	idBits    = 20
	idMask    = 1<<idBits - 1
)

// Flags, above the issue time.
const (
	fPointer uint64 = 1 << (issueBits + iota)
	fAtomic
	fUnsignaled
	fDC
	fFlush
	fWide      // the timeline lives in the fabric's wide table
	fDCISwitch // the message waited for its DCI to be re-targeted
	fNIC       // the requester's Msg.NIC
	fMsgRate   // the NIC's message pipeline, not its link, held the message before it was sent
)

func (r *rec) has(f uint64) bool { return r.issue&f != 0 }
func (r *rec) set(f uint64, on bool) {
	if on {
		r.issue |= f
	} else {
		r.issue &^= f
	}
}
func (r *rec) at() sim.Time    { return sim.Time(r.issue & maxIssue) }
func (r *rec) src() int32      { return int32(r.ends & idMask) }
func (r *rec) dst() int32      { return int32(r.ends >> idBits & idMask) }
func (r *rec) qp() int32       { return int32(r.ends >> (2 * idBits) & idMask) }
func (r *rec) refs() int       { return int(r.ends >> 60 & 3) }
func (r *rec) connMisses() int { return int(r.ends >> 62) }
func (r *rec) bbs() int32      { return int32(r.misc >> 16) }

func (r *rec) setEnds(src, dst, qp int32) {
	r.ends = r.ends&^(1<<60-1) | uint64(src)&idMask | (uint64(dst)&idMask)<<idBits | (uint64(qp)&idMask)<<(2*idBits)
}
func (r *rec) setRefs(n int) { r.ends = r.ends&^(3<<60) | uint64(n)<<60 }
func (r *rec) addConnMiss()  { r.ends += 1 << 62 }

// encode packs m; the record's ring link, references and waits are left
// as they were.
func (r *rec) encode(m *Msg) {
	switch {
	case m.Issue < 0 || m.Issue > maxIssue:
		panic(fmt.Sprintf("hw: message issued at %v, outside the record's [0, 2^55) ps", m.Issue))
	case m.Channel < 0 || m.Channel > MaxChannel:
		panic(fmt.Sprintf("hw: channel %d outside [0, %d]", m.Channel, MaxChannel))
	case m.BBs < 0 || m.BBs > MaxBBs:
		panic(fmt.Sprintf("hw: a WQE of %d basic blocks, outside [0, %d]", m.BBs, MaxBBs))
	case uint32(m.Src) >= MaxNICs || uint32(m.Dst) >= MaxNICs || uint32(m.QP) >= MaxQPs:
		panic(fmt.Sprintf("hw: NIC %d to %d on QP %d: indices outside [0, %d)", m.Src, m.Dst, m.QP, MaxNICs))
	}
	keep := r.issue & (fWide | fDCISwitch | fMsgRate)
	r.issue = uint64(m.Issue) | keep
	r.set(fPointer, m.Pointer)
	r.set(fAtomic, m.Atomic)
	r.set(fUnsignaled, m.Unsignaled)
	r.set(fDC, m.DC)
	r.set(fFlush, m.Flush)
	r.set(fNIC, m.NIC)
	r.tag = m.Tag
	r.setEnds(m.Src, m.Dst, m.QP)
	r.bytes, r.wqe = m.Bytes, m.WQE
	r.misc = uint32(m.Channel) | uint32(m.BBs)<<16
}

// decode unpacks r.
func (r *rec) decode() Msg {
	return Msg{Issue: r.at(), Tag: r.tag, Channel: int32(r.misc & 0xffff), QP: r.qp(), Dst: r.dst(), Src: r.src(),
		Bytes: r.bytes, BBs: r.bbs(), WQE: r.wqe, Pointer: r.has(fPointer), Atomic: r.has(fAtomic),
		Unsignaled: r.has(fUnsignaled), DC: r.has(fDC), Flush: r.has(fFlush), NIC: r.has(fNIC)}
}

// txCtx and rxCtx are the connection contexts the requester (its QP or
// DCI) and the responder (its QP for this connection, keyed by the
// requester and its QP, or one of its DCTs, keyed apart from QP numbers)
// need in their caches; the responder's numbering is the fabric's.
func (r *rec) txCtx() int32 {
	if r.has(fDC) {
		return 1<<22 | r.qp()
	}
	return r.qp()
}

func (f *Fabric) rxCtx(r *rec) int32 {
	switch {
	case f.dgram:
		// A datagram responder keeps state per peer, not per queue.
		return r.src()
	case r.has(fDC):
		return 1<<23 | r.src()%f.dcts
	case f.peerQPs > 0:
		return r.src()*f.peerQPs + r.qp()%f.peerQPs
	}
	return r.src()<<12 ^ r.qp()
}

// A message's stamps: the times after Issue.
const (
	sIssueEnd = iota // the requester finished issuing (doorbell rung)
	sRung            // the doorbell announcing it reached the NIC
	sServed          // the NIC began that doorbell's processing
	sSent            // first byte on the wire
	sArrived         // last byte at the responder's port
	sVisible         // payload observable in the responder's memory
	nStamps
)

// MsgTimes is a message's timeline in full. A message's completion is
// observable at its Completed report: the engine's time then.
type MsgTimes struct {
	Issue, IssueEnd, Rung, Served, Sent, Arrived, Visible sim.Time
	ConnMiss, DCISwitch                                   sim.Time
	// RateBound: what held the message between Served and Sent beyond
	// the NIC's own work was its message pipeline (the message rate,
	// shared by sends and receives), not the egress link.
	RateBound bool
}

// Times is message id's timeline.
func (n *NIC) Times(id int32) MsgTimes {
	f := n.fab
	m := f.msgs.At(id)
	t := MsgTimes{Issue: m.at(), IssueEnd: f.stampAt(m, sIssueEnd), Rung: f.stampAt(m, sRung), Served: f.stampAt(m, sServed),
		Sent: f.stampAt(m, sSent), Arrived: f.stampAt(m, sArrived), Visible: f.stampAt(m, sVisible),
		ConnMiss: sim.Time(m.connMisses()) * f.P.ConnMiss}
	if m.has(fDCISwitch) {
		t.DCISwitch = f.P.DCSwitch
	}
	t.RateBound = m.has(fMsgRate)
	return t
}

// PrefetchMsg asks for message id's record (see sim.Prefetcher).
func (f *Fabric) PrefetchMsg(id int32) { prefetch.Line(unsafe.Pointer(f.msgs.At(id))) }

// MsgQueue is message id's requester NIC and QP.
func (f *Fabric) MsgQueue(id int32) (src, qp int32) {
	m := f.msgs.At(id)
	return m.src(), m.qp()
}

// SetIssueEnd records when the requester finished issuing message id.
func (f *Fabric) SetIssueEnd(id int32, t sim.Time) { f.stamp(f.msgs.At(id), sIssueEnd, t) }

// stampAt reads stamp k of m.
func (f *Fabric) stampAt(m *rec, k int) sim.Time {
	if m.has(fWide) {
		return f.wide.At(int32(m.off[0]))[k]
	}
	return m.at() + sim.Time(m.off[k])
}

// stamp sets stamp k of m to v, moving the timeline to the wide table when
// v does not fit an offset.
func (f *Fabric) stamp(m *rec, k int, v sim.Time) {
	if m.has(fWide) {
		f.wide.At(int32(m.off[0]))[k] = v
		return
	}
	if d := v - m.at(); d >= 0 && d <= math.MaxUint32 {
		m.off[k] = uint32(d)
		return
	}
	var all [nStamps]sim.Time
	for j := range all {
		all[j] = f.stampAt(m, j)
	}
	all[k] = v
	w := f.wide.Alloc()
	*f.wide.At(w) = all
	m.off[0] = uint32(w)
	m.set(fWide, true)
}
