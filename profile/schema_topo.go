package profile

// The cluster's fabric beyond one switch: how ranks share NICs and how
// NICs reach each other. topo.tiers 1 is the reference, every NIC on one
// non-blocking switch (fabric.latency_ns apart); 2 is a rail-optimized
// leaf/spine fat tree.
var topoDefs = []Def{
	{"topo.tiers", "count", 1, 2, "switch tiers: 1 = one non-blocking switch; 2 = rail-optimized leaf/spine (NIC k of every node on rail k's leaves, every leaf wired to every spine)"},
	{"topo.gpus_per_nic", "count", 1, 8, "GPUs (ranks) sharing one NIC: its processing pipeline, link and port"},
	{"topo.nics_per_gpu", "count", 1, 8, "NICs of its own per GPU, each with its own processing pipeline, connection cache, QPs, link and rail; a rank stripes its queues over them (1 with topo.gpus_per_nic above 1)"},
	{"topo.planes_per_nic", "count", 1, 4, "planes of one NIC: each its own link (link.gbps split evenly) and rail, sharing the NIC's processing pipeline, connection cache and QPs"},
	{"topo.leaf_radix", "count", 4, 1024, "ports per leaf switch, split between NIC downlinks and spine uplinks by topo.oversubscription"},
	{"topo.oversubscription", "ratio", 1, 16, "leaf downlinks per uplink (1 = non-blocking)"},
	{"topo.hop_latency_ns", "ns", 0, 1e5, "each switch traversal and cable beyond the one switch of fabric.latency_ns"},
	{"topo.hop_buffer_kb", "KiB", 0, 1 << 20, "switch buffering for one uplink or spine downlink; beyond it, credit flow control stalls the sender's link"},
	{"topo.adaptive", "count", 0, 1, "0 = static ECMP: a flow (requester, responder, QP) hashes to one spine; 1 = adaptive routing: each message takes the spine whose links free first"},
}
