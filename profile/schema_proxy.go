package profile

// mini-proxy: the GPU's side of the descriptor handoff, the CPU worker's
// costs and the NIC's handling of queues a host thread owns (§4.2).
//
// Host-side costs come as pairs like the GPU's: NAME.cycles at the worker
// core's clock (proxy.cpu_cold_mhz or proxy.cpu_warm_mhz) plus NAME.ns of
// memory-system time, which a warm socket (uncore and mesh ramped up under
// sustained load) shortens by proxy.warm_ns_ratio.
var proxyDefs = concat(
	cost("gpu.host_load", "dependent SM load of host memory over PCIe (the ring's host-resident progress, a host-resident completion counter)"),
	cost("gpu.host_store", "issue one posted 16 B SM store to host memory (a descriptor)"),
	[]Def{
		{"pcie.host_read_mps", "Mmsg/s", 0.1, 1e6, "loads of host memory one GPU's PCIe link completes per second: its threads' loads overlap up to this rate, then queue (1e6, the largest, is no limit)"},
		{"proxy.cpu_cold_mhz", "MHz", 100, 10000, "worker core clock when cold (idle before the run)"},
		{"proxy.cpu_warm_mhz", "MHz", 100, 10000, "worker core clock when warm (after sustained load)"},
		{"proxy.warm_ns_ratio", "ratio", 0.05, 1, "memory-system part of host costs when warm, as a fraction of cold"},
		{"proxy.desc_flight_ns", "ns", 0, 1e5, "posted SM store to host memory until a CPU load can see it"},
		{"proxy.base_publish_ns", "ns", 0, 1e5, "baseline handoff only: further delay until the worker sees a descriptor published by the system-scope release (a separately published tail, not the descriptor's own validity)"},
		{"proxy.gdr_flight_ns", "ns", 0, 1e5, "CPU store through a GDRCopy mapping until an SM poll can see it in GPU memory"},
		{"proxy.host_mmio_ns", "ns", 0, 1e5, "CPU doorbell store to the NIC's UAR until the NIC has it"},
		{"proxy.nic_doorbell_ns", "ns", 0, 1e5, "per-QP NIC handling of a doorbell a host thread rang (replaces nic.doorbell_ns for host-owned queues)"},
		{"proxy.nic_host_fetch_ns", "ns", 0, 1e5, "NIC DMA read of WQEs from a send queue in host memory"},
		{"proxy.host_msg_rate_mps", "Mmsg/s", 1, 1e5, "NIC-wide ceiling on WQEs of host-owned queues (the host's PCIe root port carries the descriptors, WQE reads and completions of every message)"},
	},
	hostCost("proxy.ring_poll", "one worker load of a ring slot the GPU writes (a miss on a line a PCIe agent wrote)"),
	hostCost("proxy.desc_consume", "read a visible descriptor, check its validity and clear the slot"),
	hostCost("proxy.post_chain", "one ibv_post_send call: QP lock, doorbell record, store fence, UAR doorbell store"),
	hostCost("proxy.post_wr", "build one RDMA-write WQE of a chain in the host send queue"),
	hostCost("proxy.cq_poll", "ibv_poll_cq that finds a CQE (a miss on the line the NIC wrote) and consumes it"),
	hostCost("proxy.cq_empty", "ibv_poll_cq on an empty CQ (cache-resident)"),
	hostCost("proxy.counter_host", "bump the host-resident completion counter (baseline)"),
	hostCost("proxy.counter_gdr", "store the GPU-resident completion counter through GDRCopy: write-combined store and fence (tuned)"),
)

// hostCost declares the .cycles and .ns halves of one CPU worker cost.
func hostCost(name, doc string) []Def {
	return []Def{
		{name + ".cycles", "cycles", 0, 1e7, doc + " (core-clock part)"},
		{name + ".ns", "ns", 0, 1e7, doc + " (memory-system part)"},
	}
}
