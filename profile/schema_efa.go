package profile

// AWS Elastic Fabric Adapter: what its Scalable Reliable Datagram
// transport adds to the NIC model. On an EFA host the nic.*, link.* and
// fabric.* constants describe the EFA device and its fabric; these are the
// datagram transport's own.
var efaDefs = []Def{
	{"efa.generation", "count", 0, 8, "EFA generation of the host's adapters (2 = EFAv2 on p5, 3 = EFAv3 on p5en, 4 = EFAv4 on p6); 0 = no EFA, where the datagram mechanism refuses to run"},
	{"efa.ah_entries", "count", 1, 1 << 20, "address handles (with their peers' datagram state) the adapter caches; a datagram queue's WQE to a peer whose handle was evicted waits for it"},
	{"efa.ah_miss_ns", "ns", 0, 1e6, "fetching an evicted address handle and peer state from host memory"},
	{"efa.paths", "count", 1, 256, "fabric paths the adapter sprays one peer's packets over (with two tiers: spines)"},
	{"efa.rto_us", "µs", 1, 1e6, "retransmission timeout of a lost packet: SRD sends it again, alone and on a path picked anew, this long after it left (a run checks that it exceeds a round trip)"},
}
