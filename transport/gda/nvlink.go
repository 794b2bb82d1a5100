package gda

import (
	"math"

	"moebench/transport"
	"moebench/transport/hw"
	"moebench/transport/sim"
)

// nvlink is the same-node path when the workload allows it: the warp copies
// the payload into the peer's buffer with loads and stores, so the copy
// occupies the warp, and the GPU's NVLink port is shared by its warps.
type nvlink struct {
	on      bool
	perNode int
	warpBpp float64 // bytes per picosecond for one warp
	portBpp float64
	latency sim.Time
	fixed   sim.Time   // per copy: the warp's first round trip
	portAt  []sim.Time // per source GPU
	mem     *hw.Memory // ranks sharing a GPU copy through its memory
	// Copies between ranks of one GPU: a warp's fixed latency and rate,
	// and when the receiver can see the bytes.
	peerFixed, peerLatency sim.Time
	peerBpp                float64
}

func newNVLink(env *transport.Env) *nvlink {
	p := env.Profile
	return &nvlink{
		on:      env.NVLink,
		perNode: env.GPUsPerNode,
		warpBpp: p.Get("nvlink.warp_gbs") / 1000,
		portBpp: p.Get("nvlink.gbs") / 1000,
		latency: sim.Ns(p.Get("nvlink.latency_ns")),
		fixed:   sim.Ns(p.Get("nvlink.copy_ns")),
		mem:     env.Mem,

		peerFixed:   sim.Ns(p.Get("gpu.peer_copy_ns")),
		peerLatency: sim.Ns(p.Get("gpu.peer_latency_ns")),
		peerBpp:     p.Get("gpu.peer_warp_gbs") / 1000,
		portAt:      make([]sim.Time, env.Ranks),
	}
}

func (n *nvlink) local(src, dst int) bool {
	return n.on && n.perNode > 0 && src/n.perNode == dst/n.perNode
}

// copy moves bytes from th's GPU to a peer and fills the times.
func (n *nvlink) copy(th *hw.Thread, t *transport.Times, bytes, src, dst int) {
	if n.mem != nil && n.mem.SameGPU(src, dst) {
		start := th.T
		th.T = n.mem.PeerCopy(src, start, int64(bytes), n.peerFixed, n.peerBpp)
		t.NVLink = true
		t.Posted, t.Served, t.Sent = start, start, start
		t.IssueEnd, t.Arrived = th.T, th.T
		t.Visible = th.T + n.peerLatency
		return
	}
	warp := n.fixed + sim.Time(math.Ceil(float64(bytes)/n.warpBpp))
	port := sim.Time(math.Ceil(float64(bytes) / n.portBpp))
	start := max(th.T, n.portAt[src])
	n.portAt[src] = start + port
	th.T = max(th.T+warp, start+port)
	t.NVLink = true
	t.Posted, t.Served, t.Sent = start, start, start
	t.IssueEnd = th.T
	t.Arrived = th.T
	t.Visible = th.T + n.latency
}
