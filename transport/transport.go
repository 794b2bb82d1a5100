package transport

import (
	"go.uber.org/zap"

	"moebench/fault"
	"moebench/hw"
	"moebench/profile"
	"moebench/sim"
)

// Op is one remote operation a sending warp asks for: an RDMA write of
// Bytes, or (Atomic) a small fetch-add on the destination, such as DeepEP's
// per-expert count or a remote tail.
type Op struct {
	Src, Dst int  // ranks
	Channel  int  // queue selector: DeepEP LL uses the destination local expert
	Bytes    int  // payload bytes; 8 for an atomic
	Atomic   bool // a fetch-add instead of a write
	Flush    bool // ring the doorbell now (the trailing atomic flushes a batch)
	// NIC keeps the op on the NIC where NVLink reaches its peer: traffic
	// meant to load the NIC's queues, as background traffic is. A
	// transport without an NVLink path has nothing to do for it; every
	// transport reports it back on delivery.
	NIC bool
	Tag int64 // the workload's own, reported back on delivery
}

// Times are the instants one Op passed through the path, for attributing
// the critical path to a mechanism.
type Times struct {
	IssueStart sim.Time // the warp began the post
	IssueEnd   sim.Time // the warp was free again (doorbell or descriptor store left the SM)
	Posted     sim.Time // the NIC (or CPU worker) could first see the request
	Served     sim.Time // the NIC began processing the WQE (after queueing)
	Sent       sim.Time // first byte on the wire
	Arrived    sim.Time // last byte at the responder's port
	Visible    sim.Time // observable in the destination GPU's memory
	// Own is NIC time between Served and Sent that the transport
	// attributes to causes of its own, in the order Transport.Causes
	// lists them (such as fetching connection context, or re-targeting a
	// DCI).
	Own    [MaxOwnCauses]sim.Time
	NVLink bool // delivered over NVLink instead of the NIC
	// RateBound: what held the op between Served and Sent beyond the
	// NIC's own work was the NIC's message rate (its pipeline busy with
	// other messages), not its egress link.
	RateBound bool
}

// Delivery is reported when an Op's payload is visible at its destination.
type Delivery struct {
	Op    Op
	Times Times
}

// Warp is a sending agent on a rank's GPU. The workload owns it; a Conn
// advances its clock (T.T) by the costs it pays and calls Resume when the
// warp may continue.
type Warp struct {
	// Rank and ID (the workload's: an index into its own state) take 32
	// bits each, which keeps a warp at 40 bytes: a large layer pools
	// millions, each with the workload's own state beside it.
	Rank int32
	ID   int32
	T    hw.Thread
	// Resume is called by the Conn once a Post has returned control to the
	// warp; the warp's next Post belongs at its local time T.T.
	Resume func(e *sim.Engine, w *Warp)
}

// Env is the simulated cluster a Conn runs on.
type Env struct {
	E           *sim.Engine
	Profile     *profile.Profile
	Ranks       int
	GPUsPerNode int // ranks per node (host): how NICs sit on rails
	// NVLDomain is the GPUs of one NVLink domain, a whole number of nodes
	// (an NVL72 rack spans 18 hosts); 0 means the node.
	NVLDomain int
	// NVLink lets peers of one NVLink domain use NVLink copies instead of
	// the NIC.
	NVLink bool
	// Delivered receives every Op when its payload is visible.
	Delivered func(e *sim.Engine, d Delivery)
	// PrefetchDelivery, when set, is a hint a Conn may give a few events
	// before it calls Delivered for the op tagged tag: the workload asks
	// for the memory that delivery will read. It must change nothing.
	PrefetchDelivery func(tag int64)
	// Mem, when set, is the GPUs' copy bandwidth that the layer's own
	// copies take too: a copy between two ranks on one GPU (the native
	// engine's virtual ranks) is a device-memory copy through it, not
	// NVLink.
	Mem *hw.Memory
	// Faults, when not empty, is what goes wrong on the fabric during
	// this phase: the transport applies its packet loss, link and spine
	// faults to the models it builds, and its mechanism reacts as the
	// hardware and software it models do (retransmission, re-targeting,
	// retries). Its times are on this phase's clock. Slow ranks are the
	// workload's to apply.
	Faults *fault.Plan
	// Fail, when set, is told when a queue goes into error or a proxy
	// gives up (the first time only matters: the phase has failed, and
	// the workload stops it); the ops behind it are never delivered.
	Fail func(*fault.Failure)
	Log  *zap.Logger
}

// Transport builds connections of one mechanism with its parameters.
type Transport interface {
	Name() string
	// Causes are what the Own times of its deliveries hold, in order (at
	// most MaxOwnCauses).
	Causes() []Cause
	// QueueDepth is how many WQEs one GPU-written send queue holds, for a
	// workload that keeps that many in flight without polling
	// completions; 0 when the transport's GPU side does not write send
	// queues.
	QueueDepth() int
	// Open connects env's ranks on env's engine. A layer's dispatch and
	// combine each open their own, on engines of their own that may run
	// at once on two goroutines: Open must be safe to call concurrently,
	// and a Conn is used from one goroutine only.
	Open(env *Env) (Conn, error)
}

// Conn posts operations for one layer run.
type Conn interface {
	// Post issues op from w at w's local time (the caller schedules it at
	// that time). The Conn calls w.Resume when the warp may continue; it
	// may block the warp first (a full queue, a held lock, a full ring).
	Post(e *sim.Engine, w *Warp, op Op)
	// Resources reports what the run used.
	Resources() Resources
}

// Resources are the queues and state a transport holds, per NIC unless
// said otherwise: the kinds every transport has (QPs, connections, queue
// memory), and Own for a mechanism's own kinds, which it declares to the
// seam (Holder) for the reports and sizing.
type Resources struct {
	QPsPerNIC         int     `json:"qps_per_nic"`
	ActiveConnPerNIC  int     `json:"active_connections_per_nic"`
	ConnKnee          int     `json:"connection_knee"` // the profile's onset of context-cache pressure
	QueueBytesPerRank int64   `json:"queue_bytes_per_rank"`
	ConnMissRate      float64 `json:"conn_miss_rate"`
	// HostQueues is true when the queues counted in QueueBytesPerRank live
	// in host memory (a CPU proxy's rings and send queues), not the GPU's.
	HostQueues bool `json:"-"`
	// Own counts what a mechanism holds beyond the fields above, by a name
	// that says what and per what: its declared Resource's Name (the
	// reports show each as a column).
	Own map[string]int `json:"own,omitempty"`
}

// Max keeps the larger of each figure of r and o (the phases of one layer
// report separately).
func (r Resources) Max(o Resources) Resources {
	r.QPsPerNIC = max(r.QPsPerNIC, o.QPsPerNIC)
	r.ActiveConnPerNIC = max(r.ActiveConnPerNIC, o.ActiveConnPerNIC)
	r.ConnKnee = max(r.ConnKnee, o.ConnKnee)
	r.QueueBytesPerRank = max(r.QueueBytesPerRank, o.QueueBytesPerRank)
	r.ConnMissRate = max(r.ConnMissRate, o.ConnMissRate)
	r.HostQueues = r.HostQueues || o.HostQueues
	if len(o.Own) > 0 {
		own := make(map[string]int, len(r.Own)+len(o.Own))
		for k, v := range r.Own {
			own[k] = v
		}
		for k, v := range o.Own {
			own[k] = max(own[k], v)
		}
		r.Own = own
	}
	return r
}
