package transport

import (
	"moebench/profile"
	"moebench/sim"
)

// Demand is the traffic a workload will post in one phase, summarized so
// that a transport can be sized without running it: how many operations
// each rank posts to each peer on each channel.
type Demand struct {
	Ranks, GPUsPerNode int
	// NVLDomain is the GPUs of one NVLink domain, as Env.NVLDomain.
	NVLDomain int
	// NVLink lets peers of one NVLink domain use NVLink, as Env.NVLink.
	NVLink bool
	// Channels is how many channels (0..Channels-1) the workload posts on.
	Channels int
	// Flows are the posted operations grouped by (source, destination,
	// channel), sorted in that order; local copies are not posted and not
	// listed.
	Flows []Flow
	// Exact is false when the workload posts more than Flows says
	// (background traffic beside the layer, or a mode whose operations the
	// workload does not enumerate): resources that depend on which queues
	// carry traffic are then estimates, and floors count only Flows.
	Exact bool
}

// Flow is what one source posts to one destination on one channel.
type Flow struct {
	Src, Dst, Channel int32
	Writes            int32 // RDMA writes
	Atomics           int32 // 8 B fetch-adds (counts, flags, tails)
	Bytes             int64 // payload bytes of the writes
}

// OverNVLink reports whether f's operations are NVLink copies (NVLinkPath):
// NVLink is on and f stays within an NVLink domain. They use no queue and
// no NIC.
func (d *Demand) OverNVLink(f *Flow) bool {
	g := domainGPUs(d.NVLDomain, d.GPUsPerNode)
	return d.NVLink && g > 0 && int(f.Src)/g == int(f.Dst)/g
}

// domainGPUs is the GPUs of an NVLink domain: domain, or a node's when 0.
func domainGPUs(domain, perNode int) int {
	if domain > 0 {
		return domain
	}
	return perNode
}

// Ops is the flow's posted operations.
func (f Flow) Ops() int64 { return int64(f.Writes) + int64(f.Atomics) }

// Estimate is a transport's account of a demand, without running it.
type Estimate struct {
	// Resources are what Conn.Resources would report after running the
	// demand (ConnMissRate excepted, which only a run knows).
	Resources Resources
	// Floor is a time no run of the demand on this transport beats: the
	// slowest rank's receiver-ready time from the phase start is at least
	// this. FloorBy names the mechanism that sets it.
	Floor   sim.Time
	FloorBy string
	// Class says how the configuration moves the demand. Two
	// configurations of one transport with equal classes put the same
	// operations through the same busy queues, so a run of either takes
	// the same time; they differ only in idle state (queues, workers or
	// DCIs that carry nothing). Empty means the transport cannot say.
	Class string
}

// Estimator is implemented by transports that can size a demand
// analytically. Callers discover it by type assertion.
type Estimator interface {
	Estimate(d *Demand, p *profile.Profile) (Estimate, error)
}
