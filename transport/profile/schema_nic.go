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
}

// Link and fabric.
var fabricDefs = []Def{
	{"link.gbps", "Gb/s", 1, 1e5, "port signalling rate"},
	{"link.efficiency", "ratio", 0.1, 1, "fraction of the signalling rate left after encoding and flow control"},
	{"link.mtu_b", "B", 256, 65536, "path MTU (payload bytes per packet)"},
	{"link.pkt_overhead_b", "B", 0, 1024, "headers and trailers per packet (LRH, BTH, RETH, CRCs)"},
	{"fabric.latency_ns", "ns", 0, 1e6, "one-way propagation and switching between two NICs"},
	{"link.reference_gbs", "GB/s", 0.1, 1e4, "bandwidth reference the paper normalizes goodput to"},
}

// Parts filled in by the transports that use them.
var (
	proxyDefs  []Def
	dcDefs     []Def
	connDefs   []Def

)
