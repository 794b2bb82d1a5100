package transport

import (
	"go.uber.org/zap"

	"moebench/transport/hw"
	"moebench/transport/profile"
	"moebench/transport/sim"
)

// Op is one remote operation a sending warp asks for: an RDMA write of
// Bytes, or (Atomic) a small fetch-add on the destination, such as DeepEP's
// per-expert count or a remote tail.
type Op struct {
	Src, Dst int   // ranks
	Channel  int   // queue selector: DeepEP LL uses the destination local expert
	Bytes    int   // payload bytes; 8 for an atomic
	Atomic   bool  // a fetch-add instead of a write
	Flush    bool  // ring the doorbell now (the trailing atomic flushes a batch)
	Tag      int64 // the workload's own, reported back on delivery
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
	// ConnMiss is NIC time spent fetching connection context (RC QP or DCI
	// state) for this Op; DCISwitch is time spent re-targeting a DCI.
	ConnMiss  sim.Time
	DCISwitch sim.Time
	NVLink    bool // delivered over NVLink instead of the NIC
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
	Rank int
	SM   int
	ID   int
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
	GPUsPerNode int
	// NVLink lets same-node peers use NVLink copies instead of the NIC.
	NVLink bool
	// Delivered receives every Op when its payload is visible.
	Delivered func(e *sim.Engine, d Delivery)
	// Mem, when set, is the GPUs' copy bandwidth that the layer's own
	// copies take too: a copy between two ranks on one GPU (the native
	// engine's virtual ranks) is a device-memory copy through it, not
	// NVLink.
	Mem *hw.Memory
	Log *zap.Logger
}

// Transport builds connections of one mechanism with its parameters.
type Transport interface {
	Name() string
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
// said otherwise.
type Resources struct {
	QPsPerNIC         int     `json:"qps_per_nic"`
	ActiveConnPerNIC  int     `json:"active_connections_per_nic"`
	ConnKnee          int     `json:"connection_knee"` // the profile's onset of context-cache pressure
	DCIsPerNIC        int     `json:"dcis_per_nic,omitempty"`
	ProxyRings        int     `json:"proxy_rings,omitempty"`
	ProxyWorkers      int     `json:"proxy_workers,omitempty"`
	QueueBytesPerRank int64   `json:"queue_bytes_per_rank"`
	ConnMissRate      float64 `json:"conn_miss_rate"`
}
