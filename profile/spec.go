package profile

// Specs are the constants the hardware models read, resolved from a
// profile by name once, here, into typed fields: durations in ns, rates in
// bytes per ns (GB/s) or per second, counts as ints. The models convert
// ns to their own clock; nothing below names a constant again.
//
// Each spec reads its names through Get, so that a profile's Unread still
// tells a --set that no model built reads: a spec is resolved where its
// model is built, and reads exactly the names that model needs.

// GPUSpec is the submitting SM's side (schema_gpu.go).
type GPUSpec struct {
	ClockMHz       float64
	SMs            int
	StoreSlotNs    float64 // the SM's store path per 16 B lane store
	PollGapNs      float64
	LaneDrainExtra float64 // ratio of one store's drain
	CQUpdateStores int
	Reserve        SMCost
	Atomic         SMCost
	Store16        SMCost
	StoreDrain     SMCost
	L2Load         SMCost
	FenceGPU       SMCost
	FenceSCGPU     SMCost
	ReleaseSys     SMCost
	FenceSys       SMCost
	MMIOStore      SMCost
	Handoff        SMCost
	CQPoll         SMCost
	QuietQP        SMCost
}

// SMCost is one SM-side cost: Cycles at the SM clock plus Ns that the
// clock does not scale (Table 6's T = C/f + B).
type SMCost struct{ Cycles, Ns float64 }

// GPU resolves p's GPU-side costs.
func (p *Profile) GPU() GPUSpec {
	c := func(name string) SMCost { return SMCost{Cycles: p.Get(name + ".cycles"), Ns: p.Get(name + ".ns")} }
	return GPUSpec{
		ClockMHz:       p.Get("gpu.sm_clock_mhz"),
		SMs:            int(p.Get("gpu.sms")),
		StoreSlotNs:    p.Get("gpu.sm_store_slot_ns"),
		PollGapNs:      p.Get("gpu.poll_gap_ns"),
		LaneDrainExtra: p.Get("gpu.lane_drain_extra"),
		CQUpdateStores: int(p.Get("gpu.cq_update_stores")),
		Reserve:        c("gpu.reserve"),
		Atomic:         c("gpu.atomic"),
		Store16:        c("gpu.store16"),
		StoreDrain:     c("gpu.store_drain"),
		L2Load:         c("gpu.l2_load"),
		FenceGPU:       c("gpu.fence_gpu"),
		FenceSCGPU:     c("gpu.fence_sc_gpu"),
		ReleaseSys:     c("gpu.release_sys"),
		FenceSys:       c("gpu.fence_sys"),
		MMIOStore:      c("gpu.mmio_store"),
		Handoff:        c("gpu.handoff"),
		CQPoll:         c("gpu.cq_poll"),
		QuietQP:        c("gpu.quiet_qp"),
	}
}

// NICSpec is the NIC, its PCIe link, its port and the fabric behind it, and
// the NIC a kernel emulates (schema_nic.go, schema_conn.go, schema_dc.go,
// schema_kernel.go, schema_topo.go).
type NICSpec struct {
	MMIONs, DMAReadNs, DMAWriteNs float64
	PCIeBytesPerNs                float64
	DoorbellNs, WQENs, BBFetchNs  float64
	MsgNs                         float64 // the NIC-wide message rate's slot
	TxNs, RxNs, AckNs, RxSlotNs   float64
	MaxFetchWQEs                  int
	// LinkBytesPerNs is the port's signalling rate after encoding and flow
	// control, the whole port's: its planes split it.
	LinkBytesPerNs         float64
	MTU, PktOverhead       int // bytes
	FabricNs               float64
	PortBufferBytes        float64
	ConnMissNs             float64
	ConnEntries, ConnWays  int
	DCSwitchNs, DCTargetNs float64
	Emu                    EmuNICSpec
	Topo                   TopoSpec
}

// EmuNICSpec is the NIC a kernel emulates in GPU memory; no Engines, none.
type EmuNICSpec struct {
	Engines, RanksPerGPU         int
	PollNs, CopyNs, AtomicNs     float64
	DrainNs, HostDrainNs         float64
	WarpBytesPerNs, SMBytesPerNs float64
}

// TopoSpec is the fabric's shape: tiers of switches, the NICs of a GPU and
// the planes of a NIC.
type TopoSpec struct {
	Tiers, GPUsPerNIC, NICsPerGPU int
	// PlanesPerNIC is kept as set: the link's rate is split by it as it
	// stands, and the model builds its whole part.
	PlanesPerNIC   float64
	LeafRadix      int
	Oversub        float64
	HopNs          float64
	HopBufferBytes float64
	Adaptive       bool
}

// NIC resolves p's NIC, fabric and topology constants.
func (p *Profile) NIC() NICSpec {
	return NICSpec{
		MMIONs:          p.Get("pcie.mmio_ns"),
		DMAReadNs:       p.Get("pcie.dma_read_ns"),
		DMAWriteNs:      p.Get("pcie.dma_write_ns"),
		PCIeBytesPerNs:  p.Get("pcie.gbps"),
		DoorbellNs:      p.Get("nic.doorbell_ns"),
		WQENs:           p.Get("nic.wqe_ns"),
		BBFetchNs:       p.Get("nic.bb_fetch_ns"),
		MsgNs:           1000 / p.Get("nic.msg_rate_mps"),
		TxNs:            p.Get("nic.tx_ns"),
		RxNs:            p.Get("nic.rx_ns"),
		AckNs:           p.Get("nic.ack_ns"),
		RxSlotNs:        p.Get("nic.rx_slot_ns"),
		MaxFetchWQEs:    int(p.Get("nic.max_fetch_wqes")),
		LinkBytesPerNs:  p.Get("link.gbps") * p.Get("link.efficiency") / 8,
		MTU:             int(p.Get("link.mtu_b")),
		PktOverhead:     int(p.Get("link.pkt_overhead_b")),
		FabricNs:        p.Get("fabric.latency_ns"),
		PortBufferBytes: p.Get("fabric.port_buffer_kb") * 1024,
		ConnMissNs:      p.Get("conn.miss_ns"),
		ConnEntries:     int(p.Get("conn.entries")),
		ConnWays:        int(p.Get("conn.ways")),
		DCSwitchNs:      p.Get("dc.switch_ns"),
		DCTargetNs:      p.Get("dc.target_ns"),
		Emu: EmuNICSpec{
			Engines:        int(p.Get("emunic.engines")),
			RanksPerGPU:    int(p.Get("emunic.ranks_per_gpu")),
			PollNs:         p.Get("emunic.poll_ns"),
			CopyNs:         p.Get("emunic.copy_ns"),
			AtomicNs:       p.Get("emunic.atomic_ns"),
			DrainNs:        p.Get("emunic.drain_ns"),
			HostDrainNs:    p.Get("emunic.host_drain_ns"),
			WarpBytesPerNs: p.Get("emunic.warp_gbs"),
			SMBytesPerNs:   p.Get("emunic.sm_gbs"),
		},
		Topo: TopoSpec{
			Tiers:          int(p.Get("topo.tiers")),
			GPUsPerNIC:     int(p.Get("topo.gpus_per_nic")),
			NICsPerGPU:     int(p.Get("topo.nics_per_gpu")),
			PlanesPerNIC:   p.Get("topo.planes_per_nic"),
			LeafRadix:      int(p.Get("topo.leaf_radix")),
			Oversub:        p.Get("topo.oversubscription"),
			HopNs:          p.Get("topo.hop_latency_ns"),
			HopBufferBytes: p.Get("topo.hop_buffer_kb") * 1024,
			Adaptive:       p.Get("topo.adaptive") >= 0.5,
		},
	}
}

// NVLinkSpec is the path between GPUs of one NVLink domain, and between
// ranks that share a GPU (schema_nvlink.go, schema_kernel.go).
type NVLinkSpec struct {
	PortBytesPerNs, WarpBytesPerNs float64
	LatencyNs, CopyNs              float64
	PeerCopyNs, PeerLatencyNs      float64
	PeerWarpBytesPerNs             float64
}

// NVLink resolves p's nvlink.* and gpu.peer_* constants.
func (p *Profile) NVLink() NVLinkSpec {
	return NVLinkSpec{
		PortBytesPerNs:     p.Get("nvlink.gbs"),
		WarpBytesPerNs:     p.Get("nvlink.warp_gbs"),
		LatencyNs:          p.Get("nvlink.latency_ns"),
		CopyNs:             p.Get("nvlink.copy_ns"),
		PeerCopyNs:         p.Get("gpu.peer_copy_ns"),
		PeerLatencyNs:      p.Get("gpu.peer_latency_ns"),
		PeerWarpBytesPerNs: p.Get("gpu.peer_warp_gbs"),
	}
}

// RecoverySpec is how queues recover from lost packets: an RC queue's
// timeout and retries, a proxy's reset of a queue in error, SRD's
// retransmission (schema_faults.go, schema_efa.go).
type RecoverySpec struct {
	AckTimeoutExp int // the QP's 5-bit timeout field
	RetryCnt      int
	QPResetNs     float64
	RTONs         float64
	GiveUpNs      float64 // efa.unresponsive_ms
}

// Recovery resolves p's recovery constants.
func (p *Profile) Recovery() RecoverySpec {
	return RecoverySpec{
		AckTimeoutExp: int(p.Get("nic.ack_timeout")),
		RetryCnt:      int(p.Get("nic.retry_cnt")),
		QPResetNs:     p.Get("proxy.qp_reset_us") * 1000,
		RTONs:         p.Get("efa.rto_us") * 1000,
		GiveUpNs:      p.Get("efa.unresponsive_ms") * 1e6,
	}
}

// ComputeSpec is the experts' compute on one GPU: each dtype's grouped
// GEMM, the activation between them and the slowdowns of a GEMM and a
// communication phase beside each other (schema_compute.go).
type ComputeSpec struct {
	SMs            int
	HBMBytesPerSec float64
	FP8, BF16      GEMMSpec
	ActEff         float64
	ActNs          float64
	Beside         float64
	CommBeside     float64
}

// GEMMSpec is one dtype's grouped-GEMM roofline.
type GEMMSpec struct {
	FLOPsPerSec  float64 // dense
	TileM, TileN int
	Eff, MemEff  float64
	Overlap      float64
	LaunchNs     float64
}

// Compute resolves p's compute constants.
func (p *Profile) Compute() ComputeSpec {
	gemm := func(dt string) GEMMSpec {
		k := "gemm." + dt + "."
		return GEMMSpec{
			FLOPsPerSec: p.Get("gpu."+dt+"_tflops") * 1e12,
			TileM:       int(p.Get(k + "tile_m")),
			TileN:       int(p.Get(k + "tile_n")),
			Eff:         p.Get(k + "eff"),
			MemEff:      p.Get(k + "mem_eff"),
			Overlap:     p.Get(k + "overlap"),
			LaunchNs:    p.Get(k+"launch_us") * 1000,
		}
	}
	return ComputeSpec{
		SMs:            int(p.Get("gpu.sms")),
		HBMBytesPerSec: p.Get("gpu.hbm_gbs") * 1e9,
		FP8:            gemm("fp8"),
		BF16:           gemm("bf16"),
		ActEff:         p.Get("gemm.act_eff"),
		ActNs:          p.Get("gemm.act_us") * 1000,
		Beside:         p.Get("gemm.beside"),
		CommBeside:     p.Get("gemm.comm_beside"),
	}
}
