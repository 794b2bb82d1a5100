package hw

import (
	"math"

	"moebench/transport/sim"
)

// Msg is one work request as the NIC sees it. A layer of thousands of
// ranks holds tens of millions in flight at once, so its timeline is kept
// as 32-bit offsets from Issue (4.29 ms of picoseconds) and moves to the
// fabric's wide table, exactly, in the rare message that outgrows them;
// read it whole with NIC.Times.
type Msg struct {
	// The requester's own, carried for it so that it keeps no record per
	// message: a tag, when the GPU began issuing the WQE (the base of its
	// timeline; the end is set with SetIssueEnd), the workload's channel
	// (and Flush below).
	Issue sim.Time
	Tag   int64
	// off holds the timeline's stamps: times as offsets from Issue,
	// durations as they are; while wide, off[0] is the wide table's slot.
	off     [nStamps]uint32
	Channel int32
	QP      int32
	Dst     int32 // destination NIC index in the fabric
	Bytes   int32 // payload bytes on the wire
	BBs     int32 // 64 B basic blocks of the WQE
	WQE     int32 // the transport's index of this WQE in its queue
	Src     int32 // requester NIC index
	// Connection contexts the requester (TxCtx: its QP or DCI) and the
	// responder (RxCtx: its QP or DCT) need in their caches.
	TxCtx, RxCtx int32
	next         int32 // the next message in its QP's ring, or -1
	Pointer      bool  // payload named by pointer: the NIC reads it by DMA
	Atomic       bool  // an 8 B fetch-add, executed by the responder NIC
	// Unsignaled WQEs produce no CQE of their own: a later signaled one on
	// the same QP retires them (§3.3).
	Unsignaled bool
	DC         bool // sent on a DCI to a DCT
	Flush      bool // the requester's: the op flushed its queue
	wide       bool // the timeline lives in the fabric's wide table
	refs       int8
}

// A message's stamps: the times after Issue, then the two waits.
const (
	sIssueEnd  = iota // the requester finished issuing (doorbell rung)
	sRung             // the doorbell announcing it reached the NIC
	sServed           // the NIC began that doorbell's processing
	sSent             // first byte on the wire
	sArrived          // last byte at the responder's port
	sVisible          // payload observable in the responder's memory
	sConnMiss         // context fetches the message waited for
	sDCISwitch        // re-targeting of its DCI the message waited for
	nStamps
)

// firstWait is the first stamp that is a duration rather than a time.
const firstWait = sConnMiss

// MsgTimes is a message's timeline in full. A message's completion is
// observable at its Completed report: the engine's time then.
type MsgTimes struct {
	Issue, IssueEnd, Rung, Served, Sent, Arrived, Visible sim.Time
	ConnMiss, DCISwitch                                   sim.Time
}

// Times is message id's timeline.
func (n *NIC) Times(id int32) MsgTimes {
	f := n.fab
	m := f.msgs.At(id)
	return MsgTimes{Issue: m.Issue, IssueEnd: f.at(m, sIssueEnd), Rung: f.at(m, sRung), Served: f.at(m, sServed),
		Sent: f.at(m, sSent), Arrived: f.at(m, sArrived), Visible: f.at(m, sVisible),
		ConnMiss: f.at(m, sConnMiss), DCISwitch: f.at(m, sDCISwitch)}
}

// SetIssueEnd records when the requester finished issuing message id.
func (f *Fabric) SetIssueEnd(id int32, t sim.Time) { f.stamp(f.msgs.At(id), sIssueEnd, t) }

// at reads stamp k of m.
func (f *Fabric) at(m *Msg, k int) sim.Time {
	if m.wide {
		return f.wide.At(int32(m.off[0]))[k]
	}
	if k >= firstWait {
		return sim.Time(m.off[k])
	}
	return m.Issue + sim.Time(m.off[k])
}

// stamp sets stamp k of m to v, moving the timeline to the wide table when
// v does not fit an offset.
func (f *Fabric) stamp(m *Msg, k int, v sim.Time) {
	if m.wide {
		f.wide.At(int32(m.off[0]))[k] = v
		return
	}
	d := v
	if k < firstWait {
		d -= m.Issue
	}
	if d >= 0 && d <= math.MaxUint32 {
		m.off[k] = uint32(d)
		return
	}
	var all [nStamps]sim.Time
	for j := range all {
		all[j] = f.at(m, j)
	}
	all[k] = v
	w := f.wide.Alloc()
	*f.wide.At(w) = all
	m.off[0], m.wide = uint32(w), true
}
