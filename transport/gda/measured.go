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
}

// RatePoint is one posting-rate measurement.
type RatePoint struct {
	Threads     int     `json:"threads"`
	QPs         int     `json:"qps"`
	SMs         int     `json:"sms"`
	PerDoorbell int     `json:"wqes_per_doorbell"`
	Style       string  `json:"style"` // thread, coop, handoff, lock
	Mps         float64 `json:"mmsg_per_s"`
}
