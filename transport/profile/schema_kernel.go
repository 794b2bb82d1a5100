package profile

// The layer kernels' own GPU work beyond posting (casting, copying,
// signalling, syncing, reducing), as DeepEP's low-latency kernels do it:
// what `moebench calibrate --layer` fits from the native layer's kernels.
var kernelDefs = []Def{
	{"kernel.start_ns", "ns", 0, 1e6, "from a phase's launch until a rank's blocks begin their work (block scheduling, prologue)"},
	{"kernel.cast_ns", "ns", 0, 1e6, "one SM casting one token to its message (load, per-128 amax, scale, store), beyond the bytes it moves"},
	{"kernel.grid_sync_ns", "ns", 0, 1e6, "one grid sync over a rank's SMs"},
	{"kernel.recv_task_ns", "ns", 0, 1e6, "a receiving warp group claiming one (local expert, source) block: count, packed range, hand-off to its warps"},
	{"kernel.recv_token_ns", "ns", 0, 1e6, "a receiving warp unpacking one token beyond its copy (header, source index, scales)"},
	{"kernel.reduce_token_ns", "ns", 0, 1e6, "one SM reducing one token's top-k outputs, beyond the bytes it reads"},
	{"gpu.warp_copy_ns", "ns", 0, 1e6, "fixed latency of one warp copying one message within device memory (the first loads' round trip)"},
	{"nvlink.copy_ns", "ns", 0, 1e6, "fixed latency of one warp copying one message into a peer's buffer"},
}

// The emulated NIC of the native engine: warps on SMs reserved for it poll
// doorbells, read WQEs and execute them. A model run that predicts a native
// run maps these onto the NIC constants (see moebench's native/layer).
var emunicDefs = []Def{
	{"emunic.poll_ns", "ns", 0, 1e6, "from a doorbell store until a NIC warp acts on it (its polling period and the load)"},
	{"emunic.wqe_ns", "ns", 0, 1e6, "a NIC warp reading, checking and starting one WQE from GPU memory (serialized per queue)"},
	{"emunic.host_wqe_ns", "ns", 0, 1e6, "the same for a WQE in host memory (mini-proxy's queues, read over PCIe)"},
	{"emunic.read_ns", "ns", 0, 1e6, "a NIC warp's read of a payload until its first bytes arrive"},
	{"emunic.sm_gbs", "GB/s", 0.1, 1e5, "payload bytes one NIC SM moves per second"},
	{"emunic.sm_mps", "Mmsg/s", 0.01, 1e5, "WQEs one NIC SM executes per second"},
	{"emunic.latency_ns", "ns", 0, 1e6, "from a NIC warp's last store until the destination's poll can see it"},
}
