package profile

// NIC, PCIe and completion path of the GPU-submitted write.
var nicDefs = []Def{
	{"pcie.mmio_ns", "ns", 0, 1e5, "doorbell MMIO store from the SM to the NIC's UAR"},
	{"pcie.dma_read_ns", "ns", 0, 1e5, "NIC DMA read round trip to GPU memory (WQE fetch, pointer payload)"},
	{"pcie.dma_write_ns", "ns", 0, 1e5, "NIC DMA write into GPU memory until a polling SM can observe it"},
	{"pcie.gbps", "GB/s", 0.1, 1e4, "NIC-GPU PCIe bandwidth per direction"},
	{"nic.doorbell_ns", "ns", 0, 1e5, "per-QP doorbell handling before the WQE fetch (serialized per QP)"},
	{"nic.wqe_ns", "ns", 0, 1e5, "per-QP in-order processing of one WQE (serialized per QP)"},
	{"nic.bb_fetch_ns", "ns", 0, 1e5, "extra fetch time per additional 64 B basic block of a WQE"},
	{"nic.msg_rate_mps", "Mmsg/s", 1, 1e5, "NIC-wide message-rate ceiling across all QPs"},
	{"nic.tx_ns", "ns", 0, 1e5, "transmit pipeline from fetched WQE to the first byte on the wire"},
	{"nic.rx_ns", "ns", 0, 1e5, "receive pipeline from the last byte to the PCIe write"},
	{"nic.ack_ns", "ns", 0, 1e5, "responder ACK generation and requester ACK processing"},
	{"nic.max_fetch_wqes", "count", 1, 4096, "most WQEs one doorbell-triggered fetch reads"},
	{"nic.rx_slot_ns", "ns", 0, 1e4, "processing-pipeline time of one received message (the pipeline sent messages use too)"},
}

// Connection state in the NIC (§4.3.3): a cache of connection contexts.
var connDefs = []Def{
	{"conn.entries", "count", 1, 1 << 20, "connection contexts (RC QPs, DCIs, DCTs) the NIC caches"},
	{"conn.ways", "count", 1, 64, "associativity of the context cache"},
	{"conn.miss_ns", "ns", 0, 1e6, "fetching a context from host memory on a miss; stalls the receive pipeline"},
}

// Link and fabric.
var fabricDefs = []Def{
	{"link.gbps", "Gb/s", 1, 1e5, "port signalling rate"},
	{"link.efficiency", "ratio", 0.1, 1, "fraction of the signalling rate left after encoding and flow control"},
	{"link.mtu_b", "B", 256, 65536, "path MTU (payload bytes per packet)"},
	{"link.pkt_overhead_b", "B", 0, 1024, "headers and trailers per packet (LRH, BTH, RETH, CRCs)"},
	{"fabric.latency_ns", "ns", 0, 1e6, "one-way propagation and switching between two NICs"},
	{"fabric.port_buffer_kb", "KiB", 0, 1 << 20, "switch buffering for one egress port; beyond it, credit flow control stalls the sender's link (head-of-line)"},
	{"link.reference_gbs", "GB/s", 0.1, 1e4, "bandwidth reference the paper normalizes goodput to"},
}

// Dynamically Connected transport (§3.4, §4.3.3).
var dcDefs = []Def{
	{"dc.switch_ns", "ns", 0, 1e6, "a DCI changing destination: drain the previous target's ACKs and connect to the new DCT (serializes the DCI)"},
	{"dc.target_ns", "ns", 0, 1e5, "responder DCT work per DC message (address-vector key and state checks)"},
}
