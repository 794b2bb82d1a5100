package hw

import (
	"math"

	"moebench/profile"
	"moebench/sim"
)

// NVLink is the same-node path where the workload allows it: the warp
// copies the payload into the peer's buffer with loads and stores, so the
// copy occupies the warp, and the GPU's NVLink port is shared by its
// warps. Every transport that carries same-node peers uses it, so that a
// layer that never touches a NIC times the same on all of them.
type NVLink struct {
	on      bool
	perNode int
	warpBpp float64 // bytes per picosecond for one warp
	portBpp float64
	latency sim.Time
	fixed   sim.Time   // per copy: the warp's first round trip
	portAt  []sim.Time // per source GPU
	mem     *Memory    // ranks sharing a GPU copy through its memory
	// Copies between ranks of one GPU: a warp's fixed latency and rate,
	// and when the receiver can see the bytes.
	peerFixed, peerLatency sim.Time
	peerBpp                float64
}

// An SM's store reaches NVLink as packets of at most nvlinkPayload bytes,
// each with nvlinkPacketOverhead bytes of header and framing, so the link
// carries a copy's bytes at 4/5 of its line rate (nvlink.gbs): NVIDIA's
// NCCL lead on NVIDIA/nccl-tests#149, "a line rate of 25GB/s (in each
// direction) which converts to ~20GB/s effective bandwidth with a 128B
// payload size ... SMs are limited to 128B payload size, when Copy
// Engines can use 256B". DeepEP's authors measured the same 160 GB/s on
// the H800's 200 GB/s (deepseek-ai/DeepEP#16).
const (
	nvlinkPayload        = 128
	nvlinkPacketOverhead = 32
)

// NVLinkWireBytes is what bytes stored by SMs occupy on the link: the
// payload plus each packet's overhead.
func NVLinkWireBytes(bytes int64) int64 {
	return bytes + (bytes+nvlinkPayload-1)/nvlinkPayload*nvlinkPacketOverhead
}

// NewNVLink is the NVLink path of ranks ranks, perNode to an NVLink domain
// (a node, or a rack that NVLink joins across hosts), from
// p's nvlink.* and gpu.peer_* constants; off, no pair is Local. mem, when
// set, carries the copies between ranks of one GPU.
func NewNVLink(p *profile.Profile, on bool, perNode, ranks int, mem *Memory) *NVLink {
	return NVLinkOf(p.NVLink(), on, perNode, ranks, mem)
}

// NVLinkOf is NewNVLink from a resolved spec.
func NVLinkOf(s profile.NVLinkSpec, on bool, perNode, ranks int, mem *Memory) *NVLink {
	return &NVLink{
		on:      on,
		perNode: perNode,
		warpBpp: s.WarpBytesPerNs / 1000,
		portBpp: s.PortBytesPerNs / 1000,
		latency: sim.Ns(s.LatencyNs),
		fixed:   sim.Ns(s.CopyNs),
		mem:     mem,

		peerFixed:   sim.Ns(s.PeerCopyNs),
		peerLatency: sim.Ns(s.PeerLatencyNs),
		peerBpp:     s.PeerWarpBytesPerNs / 1000,
		portAt:      make([]sim.Time, ranks),
	}
}

// Local reports whether src reaches dst over NVLink.
func (n *NVLink) Local(src, dst int) bool {
	return n.on && n.perNode > 0 && src/n.perNode == dst/n.perNode
}

// Release is a release that th makes toward dst's memory, cost its own:
// across GPUs it waits for th's NVLink stores to land first. Between
// ranks of one GPU the fitted peer-copy costs (gpu.peer_*) were measured
// with the kernels' fences in them, so nothing is added.
func (n *NVLink) Release(th *Thread, src, dst int, cost sim.Time) {
	if n.mem != nil && n.mem.SameGPU(src, dst) {
		return
	}
	th.Fence(cost)
}

// Copy moves bytes from src's GPU to dst's by th's warp, which is busy
// until th.T on return; the copy begins at start and the receiver can see
// the bytes at visible.
func (n *NVLink) Copy(th *Thread, bytes, src, dst int) (start, visible sim.Time) {
	if n.mem != nil && n.mem.SameGPU(src, dst) {
		start = th.T
		th.T = n.mem.PeerCopy(src, start, int64(bytes), n.peerFixed, n.peerBpp)
		return start, th.T + n.peerLatency
	}
	warp := n.fixed + sim.Time(math.Ceil(float64(bytes)/n.warpBpp))
	port := sim.Time(math.Ceil(float64(NVLinkWireBytes(int64(bytes))) / n.portBpp))
	start = max(th.T, n.portAt[src])
	n.portAt[src] = start + port
	th.T = max(th.T+warp, start+port)
	// The stores are in flight until the peer has them: a release the
	// warp makes next waits for that.
	th.drain = max(th.drain, th.T+n.latency)
	return start, th.T + n.latency
}
