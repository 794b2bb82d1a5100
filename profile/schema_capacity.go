package profile

// What one GPU and one NIC hold at most. The timing model never reads
// these: a deployment past them cannot start, whatever it would take, so
// the commands refuse it before modelling anything.
var capacityDefs = []Def{
	{"gpu.memory_gb", "GB", 1, 1e5, "device memory per GPU (10^9 B): the layer's communication buffers and GPU-resident send queues must fit in what gpu.reserved_gb leaves of it"},
	{"gpu.reserved_gb", "GB", 0, 1e5, "device memory per GPU (10^9 B) the model's weights, activations and caches keep, which the layer's buffers cannot use"},
	{"nic.max_qps", "count", 1, 1 << 24, "queue pairs one NIC supports, RC QPs and DC initiators alike (the device's max_qp)"},
	{"nic.max_qp_wr", "count", 1, 1 << 24, "work requests one send queue holds (the device's max_qp_wr): a mechanism's queue depth must fit in it"},
}
