package gda

// Measured holds GPU-side figures measured on a real GPU (moebench
// calibrate) in the units the experiments report them. FitGPU turns them
// into profile constants in the model's own units (cycles at the SM clock
// plus fixed ns), so that a profile can combine locally measured GPU costs
// with a NIC profile.
type Measured struct {
	GPU      string  `json:"gpu"`
	Driver   string  `json:"driver"`
	CUDA     string  `json:"cuda"`
	ClockMHz float64 `json:"sm_clock_mhz"` // effective SM clock during the runs (clock64 / globaltimer)
	SMs      int     `json:"sms"`
	Host     string  `json:"host_cpu"`
	// Doorbell target of the issue figures: "host-mapped" (a pinned host
	// page mapped into the GPU, as a UAR would be) or "device".
	DoorbellTarget string `json:"doorbell_target"`

	// IssueNs is one thread's 8 B inline issue time per ordering mode
	// (names as OrderingModes), median over many single operations, each
	// after a completion-style consumer-index update as in the single-op
	// experiment.
	IssueNs map[string]float64 `json:"issue_ns"`
	// IssueDeviceDoorbellNs is the same with the doorbell in device memory.
	IssueDeviceDoorbellNs map[string]float64 `json:"issue_device_doorbell_ns,omitempty"`
	// InlineIssueNs is issue time (gpu-fence ordering) against inline
	// payload bytes.
	InlineIssueNs map[int]float64 `json:"inline_issue_ns"`
	// Micro-operations, each a median of a dependent chain.
	AtomicNs    float64 `json:"atomic_ns"`     // device-scope atomicAdd round trip
	L2LoadNs    float64 `json:"l2_load_ns"`    // dependent load that hits L2
	Store16Ns   float64 `json:"store16_ns"`    // one 16 B store, issue only
	HandoffNs   float64 `json:"handoff_ns"`    // per-thread ordered publication step
	CQConsumeNs float64 `json:"cq_consume_ns"` // load + check + consumer-index update
	// Rates are posting rates with the doorbell target above.
	Rates []RatePoint `json:"rates"`

	// Further native measurements (moebench calibrate). IssueNoDoorbellNs
	// is the issue sequence without the doorbell store (WQE + doorbell
	// record), the reference FitGPU isolates the MMIO store against.
	IssueNoDoorbellNs float64 `json:"issue_no_doorbell_ns,omitempty"`
	// InlineIssueNoneNs is InlineIssueNs without ordering (issue cost of
	// the payload alone, no drain).
	InlineIssueNoneNs map[int]float64 `json:"inline_issue_none_ns,omitempty"`
	// EFAIssueNs is one thread's issue time posting EFA's SRD WQEs as
	// DP Direct does (a 64 B WQE, a 32-bit producer-counter doorbell, no
	// doorbell record) per ordering mode that EFA can take, host-mapped
	// doorbell; EFAIssueDeviceDoorbellNs with the doorbell in device
	// memory, EFAIssueNoDoorbellNs without it. EFAWQEsVerified WQEs were
	// checked byte for byte against the host encoder.
	EFAIssueNs               map[string]float64 `json:"efa_issue_ns,omitempty"`
	EFAIssueDeviceDoorbellNs map[string]float64 `json:"efa_issue_device_doorbell_ns,omitempty"`
	EFAIssueNoDoorbellNs     float64            `json:"efa_issue_no_doorbell_ns,omitempty"`
	EFAWQEsVerified          int                `json:"efa_wqes_verified,omitempty"`
	// PointerIssueNs is IssueNs with an 8 B pointer payload (a data
	// segment) instead of inline: the mlx5 figure EFA's compare with.
	PointerIssueNs map[string]float64 `json:"pointer_issue_ns,omitempty"`
	HostLoadNs     float64            `json:"host_load_ns,omitempty"`  // dependent load of mapped host memory (PCIe read)
	HostStoreNs    float64            `json:"host_store_ns,omitempty"` // 8 B store to mapped host memory, issue only
	// EnqueueNs and HandoffRTTNs are the proxy path by variant (baseline,
	// tuned): GPU-side enqueue, and enqueue until the GPU observes the CPU
	// worker's completion counter in mapped host memory.
	EnqueueNs    map[string]float64 `json:"enqueue_ns,omitempty"`
	HandoffRTTNs map[string]float64 `json:"handoff_rtt_ns,omitempty"`
	// WorkerCapacity is what CPU workers consume from GPU-fed rings.
	WorkerCapacity []CapacityPoint `json:"worker_capacity,omitempty"`
	// KernelCost is the enclosing-kernel experiment (Fig. 9, Table 14).
	KernelCost []KernelCostPoint `json:"kernel_cost,omitempty"`
	// WQEsVerified counts GPU-built WQEs decoded and checked field by
	// field against the host encoder before measuring.
	WQEsVerified int `json:"wqes_verified,omitempty"`
}

// CapacityPoint is one CPU worker capacity measurement.
type CapacityPoint struct {
	Workers int     `json:"workers"`
	Batch   int     `json:"batch"`
	Mps     float64 `json:"mdesc_per_s"`
}

// KernelCostPoint is one caller kernel with or without a communication
// path. LossPct is the useful-throughput loss against the same caller
// without the path at the same launch shape.
type KernelCostPoint struct {
	Caller         string  `json:"caller"` // compute, stream
	Path           string  `json:"path"`   // absent, gda, proxy
	Wait           bool    `json:"wait,omitempty"`
	Msgs           int     `json:"msgs_per_block"` // 0 with a path: dormant
	Blocks         int     `json:"blocks"`
	Regs           int     `json:"regs"`
	MaxBlocksPerSM int     `json:"max_blocks_per_sm"`
	Ms             float64 `json:"ms"`
	LossPct        float64 `json:"loss_pct"`
}

// RatePoint is one posting-rate measurement.
type RatePoint struct {
	Threads     int     `json:"threads"`
	QPs         int     `json:"qps"`
	SMs         int     `json:"sms"`
	PerDoorbell int     `json:"wqes_per_doorbell"`
	Style       string  `json:"style"` // thread, coop, handoff, lock
	Mps         float64 `json:"mmsg_per_s"`
	Target      string  `json:"doorbell_target,omitempty"` // when it differs from Measured.DoorbellTarget
}
