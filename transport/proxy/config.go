package proxy

import (
	"errors"
	"fmt"
)

// Handoff is how GPU threads hand a descriptor to the CPU workers.
type Handoff int

// The two handoffs of §4.1 (Table 3).
const (
	// Baseline: a device atomic reserves the ring slot, a PCIe read of the
	// host-resident progress checks for space, and a system-scope release
	// publishes the descriptor. Any number of producers may share a ring.
	Baseline Handoff = iota
	// Tuned: one producer per ring keeps the slot index in a register and
	// the progress cached, and validity is encoded in the descriptor: one
	// posted 16 B store.
	Tuned
	// FIFO: NVSHMEM IBRC's channel: any number of producers reserve with a
	// device atomic, read host progress only when the cached copy says the
	// FIFO is full, and order the descriptor with a GPU-scope
	// __threadfence() instead of a system-scope release (Table 6 fits
	// IBRC's enqueue as 92% clock-sensitive: no PCIe read on the path).
	FIFO
)

// Completion is where the worker reports finished operations to the GPU.
type Completion int

// Completion paths of Table 3.
const (
	CompletionHost Completion = iota // a host-resident counter the GPU polls over PCIe
	CompletionGPU                    // a GPU-resident counter the worker writes through GDRCopy
)

// CPUState is the worker cores' operating state (App. C.1).
type CPUState int

// Operating states: cold after 45 s idle (base clock), warm after 20 s of
// sustained load (turbo clock, uncore ramped up).
const (
	Cold CPUState = iota
	Warm
)

var (
	handoffNames    = []string{"baseline", "tuned", "fifo"}
	completionNames = []string{"host", "gpu"}
	stateNames      = []string{"cold", "warm"}
)

func (h Handoff) String() string    { return name(handoffNames, int(h)) }
func (c Completion) String() string { return name(completionNames, int(c)) }
func (s CPUState) String() string   { return name(stateNames, int(s)) }

func name(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return "?"
}

func parse(names []string, what, s string) (int, error) {
	for i, n := range names {
		if n == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want one of %v)", what, s, names)
}

// ParseHandoff reads "baseline", "tuned" or "fifo".
func ParseHandoff(s string) (Handoff, error) {
	i, err := parse(handoffNames, "handoff", s)
	return Handoff(i), err
}

// ParseCompletion reads "host" or "gpu".
func ParseCompletion(s string) (Completion, error) {
	i, err := parse(completionNames, "completion", s)
	return Completion(i), err
}

// ParseCPUState reads "cold" or "warm".
func ParseCPUState(s string) (CPUState, error) {
	i, err := parse(stateNames, "cpu state", s)
	return CPUState(i), err
}

// Config is one mini-proxy build and placement.
type Config struct {
	Workers    int // T: CPU workers per rank, each with its own QPs
	Rings      int // R: descriptor rings per rank; ring r is polled by worker r mod T
	Batch      int // B: most work requests chained into one post
	Handoff    Handoff
	Completion Completion
	State      CPUState
	// ReservedRings of the R rings are kept for latency-sensitive
	// traffic: in the Conn, atomics (counts, tails) go there and writes go
	// to the others.
	ReservedRings int
	// BackgroundRings, the last of the R rings, carry only the channels
	// from BackgroundChannel0 on (reserved background traffic); the
	// layer's channels use the others.
	BackgroundRings, BackgroundChannel0 int
	// RingSlots is each ring's depth in 16 B descriptors; SQDepth each
	// worker QP's send-queue depth in WQEs. Zero picks the defaults.
	RingSlots int
	SQDepth   int
}

// Defaults of mini-proxy's software (model assumptions: no P-IB row is
// sensitive to them except the loaded round trips, which queue behind them).
const (
	DefaultRingSlots = 1024
	DefaultSQDepth   = 512
)

// Single is the one-operation configuration of Table 3: one worker, one
// ring, one work request per post.
func Single(h Handoff, c Completion, s CPUState) Config {
	return Config{Workers: 1, Rings: 1, Batch: 1, Handoff: h, Completion: c, State: s}
}

// withDefaults fills zero depths.
func (c Config) withDefaults() Config {
	if c.RingSlots == 0 {
		c.RingSlots = DefaultRingSlots
	}
	if c.SQDepth == 0 {
		c.SQDepth = DefaultSQDepth
	}
	return c
}

// Validate reports a configuration the model cannot run, naming the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Workers < 1 {
		bad("workers must be at least 1 (got %d)", c.Workers)
	}
	if c.Rings < 1 {
		bad("rings must be at least 1 (got %d)", c.Rings)
	}
	if c.Rings < c.Workers {
		bad("%d rings leave some of %d workers without a ring", c.Rings, c.Workers)
	}
	if c.Batch < 1 {
		bad("batch must be at least 1 work request per post (got %d)", c.Batch)
	}
	if c.Handoff != Baseline && c.Handoff != Tuned && c.Handoff != FIFO {
		bad("unknown handoff %d", int(c.Handoff))
	}
	if c.Completion != CompletionHost && c.Completion != CompletionGPU {
		bad("unknown completion %d", int(c.Completion))
	}
	if c.State != Cold && c.State != Warm {
		bad("unknown cpu state %d", int(c.State))
	}
	if c.BackgroundRings < 0 || c.BackgroundChannel0 < 0 || (c.BackgroundRings > 0 && c.BackgroundRings >= c.Rings) {
		bad("background rings must leave at least one of %d rings for the layer (got %d from channel %d)", c.Rings, c.BackgroundRings, c.BackgroundChannel0)
	}
	if c.ReservedRings < 0 || (c.ReservedRings > 0 && c.ReservedRings >= c.Rings-max(c.BackgroundRings, 0)) {
		bad("reserved rings must leave at least one of %d rings for bulk traffic (got %d)", c.Rings-max(c.BackgroundRings, 0), c.ReservedRings)
	}
	if c.RingSlots < 1 || c.SQDepth < 1 {
		bad("ring slots and send-queue depth must be positive (got %d, %d)", c.RingSlots, c.SQDepth)
	}
	if c.SQDepth < c.Batch {
		bad("send-queue depth %d cannot hold a chain of %d", c.SQDepth, c.Batch)
	}
	return errors.Join(errs...)
}

// classes is how many sets of QPs each worker keeps per destination:
// background rings post on their own, so that a worker's send queue never
// holds the layer's writes behind theirs.
func (c *Config) classes() int {
	if c.BackgroundRings > 0 {
		return 2
	}
	return 1
}

// qpsPerNIC is the send queues of a NIC: every worker's, per class, to
// every one of ranks destinations.
func (c *Config) qpsPerNIC(ranks int) int { return c.Workers * c.classes() * ranks }

// ring is the ring channel ch's operations go through: reserved
// background channels to the background rings, atomics (counts, tails) to
// the reserved rings when there are any, writes to the rest.
func (c *Config) ring(ch int, atomic bool) int {
	ch = max(ch, 0)
	n := c.Rings - c.BackgroundRings
	if c.BackgroundRings > 0 && ch >= c.BackgroundChannel0 {
		return n + (ch-c.BackgroundChannel0)%c.BackgroundRings
	}
	bulk := n - c.ReservedRings
	if atomic && c.ReservedRings > 0 {
		return bulk + ch%c.ReservedRings
	}
	return ch % bulk
}

func (c Config) String() string {
	return fmt.Sprintf("T%d/R%d/B%d %s handoff, %s counter, %s", c.Workers, c.Rings, c.Batch, c.Handoff, c.Completion, c.State)
}
