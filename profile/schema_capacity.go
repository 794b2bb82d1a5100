package profile

// What one GPU and one NIC hold at most. The timing model never reads
// these: a deployment past them cannot start, whatever it would take, so
// the commands refuse it before modelling anything.
var capacityDefs = []Def{
	{"gpu.memory_gb", "GB", 1, 1e5, "device memory per GPU (10^9 B): the layer's communication buffers and GPU-resident send queues must fit in it"},
	{"nic.max_qps", "count", 1, 1 << 24, "queue pairs one NIC supports, RC QPs and DC initiators alike (the device's max_qp)"},
}
