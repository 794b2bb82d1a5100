package profile

// NVLink inside a node, for workloads that let same-node peers bypass the
// NIC, and the GPU's local copy path for receive-side packing.
var nvlinkDefs = []Def{
	{"nvlink.gbs", "GB/s", 1, 1e5, "NVLink bandwidth per GPU per direction"},
	{"nvlink.warp_gbs", "GB/s", 0.1, 1e4, "what one warp's loads and stores move over NVLink"},
	{"nvlink.latency_ns", "ns", 0, 1e5, "store from one GPU observable by a peer in the same node"},
	{"nvlink.domain_gpus", "count", 0, 1152, "GPUs in one NVLink domain, which may span hosts (an NVL72 rack: 72 over 18 hosts); 0: the domain is the node"},
	{"gpu.copy_gbs", "GB/s", 1, 1e5, "device-memory copy bandwidth of a receiving kernel (read + write)"},
	{"gpu.warp_copy_gbs", "GB/s", 0.1, 1e4, "what one warp copies within device memory"},
}
