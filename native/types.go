package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ErrLibraryNotLoaded is returned (wrapped) when the native library cannot
// be loaded: not built, built without cgo, or built for another ABI.
var ErrLibraryNotLoaded = errors.New("native library not loaded")

// ErrNoGPU is returned (wrapped) when the library loads but finds no CUDA
// driver or device.
var ErrNoGPU = errors.New("no CUDA GPU")

// ErrBadArgument, ErrTimeout and ErrCheck classify failures the library
// reports: an argument out of range, a GPU or CPU wait that did not finish,
// and a result that failed its own correctness check.
var (
	ErrBadArgument = errors.New("bad argument")
	ErrTimeout     = errors.New("wait timed out")
	ErrCheck       = errors.New("correctness check failed")
)

// LibEnv names the environment variable that DefaultPath consults first.
const LibEnv = "MOEBENCH_NATIVE_LIB"

// DefaultPath is where Open looks when given "": $MOEBENCH_NATIVE_LIB, else
// native/build/libmoebench_native.so under the working directory, else the
// same path beside the running executable's parent directory (bin/..).
func DefaultPath() string {
	if p := os.Getenv(LibEnv); p != "" {
		return p
	}
	rel := filepath.Join("native", "build", "libmoebench_native.so")
	if _, err := os.Stat(rel); err == nil {
		return rel
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(filepath.Dir(exe)), rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return rel
}

// OrderingModes lists the doorbell orderings in the paper's Table 4 order,
// by the names the model uses. NoDoorbell is a calibration-only sequence
// (WQE and doorbell record, no doorbell store).
var OrderingModes = []string{"none", "gpu-fence", "fenced-dbrec", "release-gpu", "threadfence", "release-sys", "fence-sys"}

// NoDoorbell names the calibration sequence without the doorbell store.
const NoDoorbell = "no-doorbell"

func orderingCode(mode string) (int, error) {
	for i, m := range OrderingModes {
		if m == mode {
			return i, nil
		}
	}
	if mode == NoDoorbell {
		return len(OrderingModes), nil
	}
	return 0, fmt.Errorf("native: unknown ordering mode %q (want one of %v or %q)", mode, OrderingModes, NoDoorbell)
}

// DoorbellTarget is where the 8 B doorbell store goes.
type DoorbellTarget int

const (
	// HostMapped is a pinned host page mapped into the GPU: the store
	// crosses PCIe as a posted write, as a store to a NIC's UAR does.
	HostMapped DoorbellTarget = iota
	// DeviceMemory keeps the doorbell in GPU memory (no PCIe crossing).
	DeviceMemory
)

func (t DoorbellTarget) String() string {
	switch t {
	case HostMapped:
		return "host-mapped"
	case DeviceMemory:
		return "device"
	}
	return fmt.Sprintf("DoorbellTarget(%d)", int(t))
}

// ParseDoorbellTarget accepts "host-mapped" (or "host") and "device".
func ParseDoorbellTarget(s string) (DoorbellTarget, error) {
	switch s {
	case "host-mapped", "host":
		return HostMapped, nil
	case "device":
		return DeviceMemory, nil
	}
	return 0, fmt.Errorf("native: unknown doorbell target %q (want host-mapped or device)", s)
}

// Styles lists the publication styles of the posting-rate experiment.
var Styles = []string{"thread", "coop", "handoff", "lock"}

func styleCode(s string) (int, error) {
	for i, v := range Styles {
		if v == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("native: unknown publication style %q (want one of %v)", s, Styles)
}

// EnqueueVariants lists the proxy enqueue variants.
var EnqueueVariants = []string{"baseline", "tuned"}

func enqueueCode(s string) (int, error) {
	for i, v := range EnqueueVariants {
		if v == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("native: unknown enqueue variant %q (want baseline or tuned)", s)
}

// DeviceInfo describes the GPU the library opened.
type DeviceInfo struct {
	Name            string `json:"name"`
	Driver          string `json:"driver"`
	CUDADriver      int    `json:"cuda_driver"`  // e.g. 13000
	CUDARuntime     int    `json:"cuda_runtime"` // e.g. 13000
	SMs             int    `json:"sms"`
	CCMajor         int    `json:"cc_major"`
	CCMinor         int    `json:"cc_minor"`
	L2Bytes         int    `json:"l2_bytes"`
	MemBytes        int64  `json:"mem_bytes"`
	RegsPerSM       int    `json:"regs_per_sm"`
	MaxThreadsPerSM int    `json:"max_threads_per_sm"`
	CanMapHost      bool   `json:"can_map_host"`
}

// CUDAVersion formats a CUDA version number (13000 -> "13.0").
func CUDAVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// Stats summarizes per-operation times of one thread. Times come from
// clock64 deltas with the timer-read overhead subtracted, converted at the
// clock the same kernel measured.
type Stats struct {
	N              int     `json:"n"`
	MedianNs       float64 `json:"median_ns"`
	P10Ns          float64 `json:"p10_ns"`
	P90Ns          float64 `json:"p90_ns"`
	MeanNs         float64 `json:"mean_ns"`
	MinNs          float64 `json:"min_ns"`
	MedianCycles   float64 `json:"median_cycles"`
	ClockMHz       float64 `json:"clock_mhz"`
	OverheadCycles float64 `json:"overhead_cycles"`
	MedianGTNs     float64 `json:"median_globaltimer_ns"`
}

// WQEFormat is the work-request layout the GPU posts.
type WQEFormat int

const (
	// MLX5 is ConnectX's RC WQE: ctrl, remote-address and data segments,
	// a doorbell record and an 8 B doorbell (mini-gda's).
	MLX5 WQEFormat = iota
	// EFA is EFA's SRD TX WQE as DP Direct posts it from the GPU: 64 B and
	// a 32-bit producer-counter doorbell, no doorbell record, no inline
	// RDMA-write payload.
	EFA
)

func (f WQEFormat) String() string {
	switch f {
	case MLX5:
		return "mlx5"
	case EFA:
		return "efa"
	}
	return fmt.Sprintf("WQEFormat(%d)", int(f))
}

// EFAOrderingModes are the orderings an EFA posting can take: all but
// fenced-dbrec, which fences a doorbell record EFA does not have.
var EFAOrderingModes = []string{"none", "gpu-fence", "release-gpu", "threadfence", "release-sys", "fence-sys"}

// IssueConfig is one single-thread issue measurement.
type IssueConfig struct {
	Mode        string         // OrderingModes or NoDoorbell (EFA: EFAOrderingModes or NoDoorbell)
	Target      DoorbellTarget //
	InlineBytes int            // >0 inline payload (multiple of 4, <= 220); 0 pointer payload of 8 B (EFA: 0 only)
	Iters       int            // timed operations; warm-up + iters <= 4096
	Warmup      int            // discarded first operations
	GapNs       int            // idle time before each operation
	Format      WQEFormat      // the WQE layout posted
}

// checkFormat refuses what the WQE format cannot post.
func (c IssueConfig) checkFormat() error {
	switch c.Format {
	case MLX5:
	case EFA:
		if c.InlineBytes != 0 {
			return fmt.Errorf("native issue: %w: EFA RDMA writes carry no inline data (%d B asked)", ErrBadArgument, c.InlineBytes)
		}
		if c.Mode == "fenced-dbrec" {
			return fmt.Errorf("native issue: %w: EFA has no doorbell record for fenced-dbrec to fence", ErrBadArgument)
		}
	default:
		return fmt.Errorf("native issue: %w: WQE format %v", ErrBadArgument, c.Format)
	}
	return nil
}

// WQEParams describes the WQEs BuildWQEs posts on the GPU.
type WQEParams struct {
	RemoteAddr uint64 // WQE k writes RemoteAddr + k*Length
	LocalAddr  uint64
	QPN        uint32
	RKey       uint32
	LKey       uint32
	Imm        uint32
	Length     uint32
	Inline     bool
	SQBBs      uint32 // power of two
	StartPI    uint32
	Opmod      uint8
	FmCeSe     uint8
	Format     WQEFormat // EFA: SQBBs counts 64 B WQEs, StartPI is the producer counter, QPN's low 16 bits the destination QP
	AH         uint16    // EFA: the destination's address handle
}

// Posted is what the GPU left behind after BuildWQEs.
type Posted struct {
	SQ       []byte  // the whole send queue
	DBRec    [4]byte // send doorbell record as stored
	Doorbell [8]byte // last doorbell value as stored
}

// Micro holds the micro-operation times (ns) of one thread.
type Micro struct {
	ClockMHz            float64 `json:"clock_mhz"`
	AtomicNs            float64 `json:"atomic_ns"`
	L2LoadNs            float64 `json:"l2_load_ns"`
	Store16Ns           float64 `json:"store16_ns"`
	HandoffNs           float64 `json:"handoff_ns"`
	CQConsumeNs         float64 `json:"cq_consume_ns"`
	HostLoadNs          float64 `json:"host_load_ns"`
	HostStoreNs         float64 `json:"host_store_ns"`
	TimerOverheadCycles float64 `json:"timer_overhead_cycles"`
}

// RateConfig is one posting-rate configuration (paper Table 5).
type RateConfig struct {
	Threads       int            `json:"threads"`
	QPs           int            `json:"qps"`
	Blocks        int            `json:"sms"` // one block per SM
	PerDoorbell   int            `json:"wqes_per_doorbell"`
	Style         string         `json:"style"`
	Target        DoorbellTarget `json:"-"`
	InlineBytes   int            `json:"inline_bytes"`
	WQEsPerThread int            `json:"-"` // 0: sized to run about 20 ms
}

// RateResult is one posting-rate measurement.
type RateResult struct {
	Mps           float64 `json:"mmsg_per_s"`
	ElapsedMs     float64 `json:"elapsed_ms"`
	WQEs          int64   `json:"wqes"`
	Doorbells     int64   `json:"doorbells"`
	WQEsPerThread int     `json:"wqes_per_thread"`
}

// ProxyResult is a GPU-side proxy timing with what the CPU worker saw.
type ProxyResult struct {
	Stats    Stats `json:"stats"`
	Consumed int64 `json:"consumed"`
	Torn     int64 `json:"torn"`
}

// CapacityConfig is one CPU worker capacity run.
type CapacityConfig struct {
	Workers     int // CPU worker threads
	Batch       int // most descriptors per doorbell
	Rings       int // 0: 32
	PerRing     int // 0: sized to run about 150 ms
	RingEntries int // 0: 4096
}

// CapacityResult is what the workers consumed.
type CapacityResult struct {
	Mps       float64 `json:"mdesc_per_s"`
	ElapsedMs float64 `json:"elapsed_ms"`
	Consumed  int64   `json:"consumed"`
	Batches   int64   `json:"batches"`
	MeanBatch float64 `json:"mean_batch"`
	Torn      int64   `json:"torn"`
}

// Callers and paths of the enclosing-kernel experiment.
var (
	Callers = []string{"compute", "stream"}
	Paths   = []string{"absent", "gda", "proxy"}
)

// KernelConfig is one enclosing-kernel configuration (paper Fig. 9).
type KernelConfig struct {
	Caller       string // compute or stream
	Path         string // absent, gda or proxy
	Wait         bool   // wait for each message's completion (proxy only)
	MsgsPerBlock int    // 0 with a path: dormant; else 1, 2, 4, 8 or 16
	Blocks       int    // 0: 528
	Threads      int    // 0: 256
	Reps         int    // 0: 7
}

// KernelResult is what one caller kernel cost.
type KernelResult struct {
	Regs           int     `json:"regs"`
	MaxBlocksPerSM int     `json:"max_blocks_per_sm"`
	LocalBytes     int     `json:"local_bytes"`
	MedianMs       float64 `json:"median_ms"`
	MinMs          float64 `json:"min_ms"`
	Messages       int64   `json:"messages"`
}

func indexOf(list []string, s, what string) (int, error) {
	for i, v := range list {
		if v == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("native: unknown %s %q (want one of %v)", what, s, list)
}

// LayerPath is how a native layer run moves its messages.
type LayerPath int

// The layer paths (MBN_LPATH_*).
const (
	// PathDirect: the sending warp stores into the peer's buffer (NVLink,
	// or the same GPU for virtual ranks).
	PathDirect LayerPath = iota
	// PathGDA: mini-gda; GPU-built WQEs on RC QPs, executed by the emulated NIC.
	PathGDA
	// PathProxy: mini-proxy; descriptors to CPU workers, host-built WQEs.
	PathProxy
	// PathDC: GPU-built WQEs on DCIs, an address vector in every WQE.
	PathDC
	// PathEFA: GPU-built EFA SRD entries (EFA DP Direct) on queues every
	// peer shares, an address handle in every entry, executed by the
	// emulated NIC; flags are writes with immediate data.
	PathEFA
)

var layerPathNames = []string{"direct", "mini-gda", "mini-proxy", "dc", "srd"}

func (p LayerPath) String() string {
	if p >= 0 && int(p) < len(layerPathNames) {
		return layerPathNames[p]
	}
	return fmt.Sprintf("LayerPath(%d)", int(p))
}

// Handoffs of the proxy path (the model's proxy.Handoff names).
var Handoffs = []string{"baseline", "tuned", "fifo"}

// LayerConfig is one native layer run: the shape, where ranks run, the
// path and its knobs, and how to time it.
type LayerConfig struct {
	Path          LayerPath
	Ranks         int // a multiple of GPUs
	GPUs          int // devices 0..GPUs-1; Ranks/GPUs ranks share each (virtual ranks when > 1)
	Tokens        int // max tokens per rank
	Hidden        int
	TopK          int
	Experts       int // physical experts, a multiple of Ranks
	FP8           bool
	SMsPerRank    int
	NICSMs        int // per device, for the emulated NIC (0 on the direct path)
	BackgroundSMs int
	// mini-gda and DC
	QPsPerPeer  int
	SQBBs       int    // send-queue basic blocks, a power of two
	Ordering    string // OrderingModes, not "none"
	PerDoorbell int
	DCIs        int // dc: DCIs per rank; srd: SRD queues per rank, shared by every peer alike
	// mini-proxy
	Workers     int
	Rings       int
	Batch       int
	Handoff     string // Handoffs
	RingEntries int
	// ReservedRing0 > 0: rings from it on carry reserved traffic and get
	// worker queues of their own.
	ReservedRing0 int
	// Normal runs DeepEP's intranode normal mode (direct path only):
	// SMsPerRank/2 channels, ring buffers of BufTokens messages per
	// (channel, peer), a tail published every Chunk tokens.
	Normal    bool `json:",omitempty"`
	Chunk     int  `json:",omitempty"`
	BufTokens int  `json:",omitempty"`
	// background posters
	BgWarps, BgBytes, BgChannel0, BgChannels, BgHeadUs int
	// emulated NIC pacing (per rank)
	Pace            bool
	LineGBs, MsgMps float64
	Warmup, Reps    int
	FlushL2, Verify bool
	Timeout         time.Duration
}

// LayerRouting is the routing in the library's flat form: rows
// [Ranks][Tokens][TopK] of physical expert ids (-1 none) and weights, and
// the dispatch oracle's counts [Ranks][Experts].
type LayerRouting struct {
	TokensPerRank []int32
	TopK          []int32
	Weights       []float32
	Expected      []int32
}

// RankPhase is one rank's phase in one repetition, ns from the first block
// of its device's launch.
type RankPhase struct {
	IssueDoneNs float64 `json:"issue_done_ns"`
	SendDoneNs  float64 `json:"send_done_ns"`
	WaitDoneNs  float64 `json:"wait_done_ns"`
	ReadyNs     float64 `json:"ready_ns"`
	KernelNs    float64 `json:"kernel_ns"`
	PostNs      float64 `json:"post_ns"`
	Posts       int64   `json:"posts"`
	Copies      int64   `json:"copies"`
}

// LayerResult is what a native layer run measured and checked.
type LayerResult struct {
	// Times[rep][phase][rank]; phase 0 is dispatch, 1 combine.
	Times         [][2][]RankPhase `json:"-"`
	WarpGroups    int              `json:"warp_groups"`     // normal mode: channels
	WarpsPerGroup int              `json:"warps_per_group"` // normal mode: warps per peer
	Workers       int              `json:"proxy_workers"`
	NICQueues     int              `json:"nic_queues"`
	WQEs          int64            `json:"wqes"`
	CQEs          int64            `json:"cqes"`
	NICBytes      int64            `json:"nic_bytes"`
	Doorbells     int64            `json:"doorbells"`
	Torn          int64            `json:"torn_reads"`
	DCISwitches   int64            `json:"dci_switches"`
	Descriptors   int64            `json:"descriptors"`
	BgPosts       int64            `json:"background_posts"`
	Checked       int64            `json:"checked"`
	Problems      int64            `json:"problems"`
	Problem       string           `json:"problem,omitempty"`
	BufferBytes   int64            `json:"buffer_bytes_per_rank"`
	QueueBytes    int64            `json:"queue_bytes_per_rank"`
	ClockMHz      float64          `json:"clock_mhz"`
	SetupMs       float64          `json:"setup_ms"`
	RunMs         float64          `json:"run_ms"`
}

// A2AConfig is one NCCL all-to-all: Bytes[src][dst] between GPUs 0..n-1,
// one rank each.
type A2AConfig struct {
	Bytes        [][]int64
	Warmup, Reps int
	Lib          string // NCCL's library; "" loads libnccl.so.2 from the loader's path
}

func (c A2AConfig) check() error {
	g := len(c.Bytes)
	if g < 1 || c.Reps < 1 || c.Warmup < 0 {
		return fmt.Errorf("nccl all-to-all: %w: %d GPUs, %d repetitions after %d warm-up", ErrBadArgument, g, c.Reps, c.Warmup)
	}
	for s, row := range c.Bytes {
		if len(row) != g {
			return fmt.Errorf("nccl all-to-all: %w: row %d has %d peers, want %d", ErrBadArgument, s, len(row), g)
		}
		for d, b := range row {
			if b < 0 {
				return fmt.Errorf("nccl all-to-all: %w: %d bytes from %d to %d", ErrBadArgument, b, s, d)
			}
		}
	}
	return nil
}

// A2AResult is an all-to-all's time: the slowest GPU's CUDA-event time
// per all-to-all over the repetitions, µs, and the NCCL that ran it.
type A2AResult struct {
	MeanUs  float64 `json:"mean_us"`
	MinUs   float64 `json:"min_us"`
	MaxUs   float64 `json:"max_us"`
	Version int     `json:"nccl_version"`
	Lib     string  `json:"nccl_lib"`
}
