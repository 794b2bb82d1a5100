package profile

// The layer kernels' own GPU work beyond posting (casting, copying,
// signalling, syncing, reducing), as DeepEP's low-latency kernels (and,
// kernel.nvl_*, its intranode normal-mode kernels) do it:
// what `moebench calibrate --layer` fits from the native layer's kernels.
var kernelDefs = []Def{
	{"kernel.start_ns", "ns", 0, 1e6, "from a phase's launch until a rank's blocks begin their work (block scheduling, prologue)"},
	{"kernel.cast_ns", "ns", 0, 1e6, "one SM casting one token to its message (load, per-128 amax, scale, store), beyond the bytes it moves"},
	{"kernel.grid_sync_ns", "ns", 0, 1e6, "one grid sync over a rank's SMs"},
	{"kernel.recv_task_ns", "ns", 0, 1e6, "a receiving warp group claiming one (local expert, source) block: count, packed range, hand-off to its warps"},
	{"kernel.recv_token_ns", "ns", 0, 1e6, "a receiving warp unpacking one token beyond its copy (header, source index, scales)"},
	{"kernel.reduce_token_ns", "ns", 0, 1e6, "one SM reducing one token's top-k outputs, beyond the bytes it reads"},
	{"kernel.recv_gbs", "GB/s", 1, 1e5, "device-memory rate of the receivers' copies into the packed layout (they read what peers just wrote), per GPU"},
	{"kernel.reduce_gbs", "GB/s", 1, 1e5, "device-memory rate of the weighted reduction (top-k inputs read, one output written), per GPU"},
	{"kernel.nvl_chunk_ns", "ns", 0, 1e6, "normal mode over NVLink: a channel's warp group publishing one chunk (its warps' barrier, the fence, the tail store), beyond the writes"},
	{"kernel.nvl_recv_chunk_ns", "ns", 0, 1e6, "normal mode over NVLink: a receiving warp group taking one chunk (the tail read, the head returned), beyond its copy"},
	{"kernel.nvl_warp_gbs", "GB/s", 0.1, 1e4, "normal mode over NVLink: what one receiving warp copies per second from the ring buffer into the received rows"},
	{"gpu.copy_queue_wait", "ratio", 0, 1, "the share of a copy's wait behind the copies queued ahead of it in the GPU's memory that a warp's own round trips come after (0: they overlap the queue; 1: they begin once the memory takes its bytes)"},
	{"gpu.warp_copy_ns", "ns", 0, 1e6, "fixed latency of one warp copying one message within device memory (the first loads' round trip)"},
	{"nvlink.copy_ns", "ns", 0, 1e6, "fixed latency of one warp copying one message into a peer's buffer"},
	{"gpu.peer_copy_ns", "ns", 0, 1e6, "fixed latency of one warp copying one message into the buffer of another rank on the same GPU (virtual ranks)"},
	{"gpu.peer_warp_gbs", "GB/s", 0.1, 1e4, "what such a warp copies per second once it streams"},
	{"gpu.peer_gbs", "GB/s", 1, 1e5, "no longer read: such copies cross the same device memory as the GPU's other copies and take gpu.copy_gbs with them (kept so that earlier layer fits load)"},
	{"gpu.peer_latency_ns", "ns", 0, 1e6, "from such a copy's last store until the receiving rank's poll can see it"},
}

// The emulated NIC of the native engine: warps on SMs reserved for it,
// each serially serving a fixed share of the queues of its GPU's ranks. A
// model run that predicts a native run sets engines and ranks_per_gpu and
// maps these onto the NIC (moebench's native/layer); 0 engines is a real
// NIC.
var emunicDefs = []Def{
	{"emunic.engines", "count", 0, 1 << 16, "NIC warps per GPU (0: the NIC is real, not emulated)"},
	{"emunic.ranks_per_gpu", "count", 1, 4096, "ranks sharing one GPU and its emulated NIC"},
	{"emunic.poll_ns", "ns", 0, 1e6, "from a doorbell store until the owning NIC warp acts on it (its polling period and the load)"},
	{"emunic.wqe_ns", "ns", 0, 1e6, "a NIC warp reading and checking one WQE from GPU memory"},
	{"emunic.drain_ns", "ns", 0, 1e6, "a NIC warp's cost per doorbell it serves from GPU memory: the first read of the WQEs, the consumer index it publishes"},
	{"emunic.host_drain_ns", "ns", 0, 1e6, "the same for a queue in host memory (reads and the publication cross PCIe)"},
	{"emunic.host_wqe_ns", "ns", 0, 1e6, "the same for a WQE in host memory (mini-proxy's queues, read over PCIe)"},
	{"emunic.copy_ns", "ns", 0, 1e6, "a NIC warp's fixed cost of one write (the payload's first round trip)"},
	{"emunic.warp_gbs", "GB/s", 0.01, 1e5, "what one NIC warp copies per second once a write streams"},
	{"emunic.sm_gbs", "GB/s", 0.01, 1e5, "what all NIC warps of one SM copy per second together"},
	{"emunic.atomic_ns", "ns", 0, 1e6, "a NIC warp's fetch-add: fences behind the queue's writes, the atomic"},
	{"emunic.latency_ns", "ns", 0, 1e6, "from a NIC warp's last store until the destination's poll can see it"},
}
