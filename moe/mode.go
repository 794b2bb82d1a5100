package moe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
)

// Mode is DeepEP's kernel family.
type Mode uint8

// The modes. The zero Mode is invalid.
const (
	LL     Mode = iota + 1 // low latency: one write per selection, QP = local expert
	Normal                 // high throughput: deduplicated per rank, chunked, tail atomics
)

// layerMode is what one Mode does differently from the other, in one
// place: the layer's runs, checks and estimates ask their mode's entry
// here rather than switch on the mode.
type layerMode struct {
	name    string
	aliases []string // other names ParseMode reads
	// run simulates the layer's dispatch and combine into res, with the
	// checks (ll.go, normal.go).
	run func(cfg *LayerConfig, res *Result) error
	// channels is the transport channels (queues per peer) the layer's
	// own traffic uses (Channels).
	channels func(s Shape, numSMs int) int
	// oneRankPerGPU reports a shape whose ranks may not share a GPU
	// (LayerConfig.RanksPerGPU).
	oneRankPerGPU func(s Shape) bool
	// checkShape refuses what the mode cannot run of a valid shape,
	// before the GPU's checks; checkScale after them (Validate).
	checkShape, checkScale func(c *LayerConfig) error
	// writes refuses chunks of chunk tokens (0 the default) that one
	// message cannot carry (Shape.CheckWrites).
	writes func(s Shape, chunk int) error
	// precheck refuses, before anything is built, what the kernels cannot
	// launch or the transport's queues cannot hold (Precheck).
	precheck func(s Shape, cfg *LayerConfig) error
	// buffer is DeepEP's buffers per rank for numSMs, bounded in floating
	// point where int64 would wrap, and what they hold.
	buffer func(s Shape, numSMs int) (bytes int64, bound float64, what string)
	// rdmaBytes is the RDMA buffer a library's limit bounds
	// (FigureRDMABytes) on channels channels.
	rdmaBytes func(s Shape, channels int) int64
	// cost is the simulation's memory for a layer (EstimateCost).
	cost func(in costIn) Cost
	// enumerated: Demands lists the mode's traffic exactly.
	enumerated bool
}

// modes holds each mode's differences, indexed by Mode; filled by init,
// as the runs it names read it too.
var modes [Normal + 1]layerMode

func init() {
	modes = [...]layerMode{
		LL: {
			name: "ll", aliases: []string{"low-latency"},
			run:           runLL,
			channels:      func(s Shape, _ int) int { return s.LocalExperts() },
			oneRankPerGPU: func(Shape) bool { return false },
			checkShape:    func(*LayerConfig) error { return nil },
			checkScale:    checkLLIndex,
			writes:        func(Shape, int) error { return nil },
			precheck:      precheckLL,
			buffer:        llBuffer,
			rdmaBytes:     func(s Shape, _ int) int64 { return satBytes(LLBufferBytes(s), llBound(s)) },
			cost:          llCost,
			enumerated:    true,
		},
		Normal: {
			name: "normal", aliases: []string{"ht"},
			run:           runNormal,
			channels:      normalChannels,
			oneRankPerGPU: func(s Shape) bool { return s.Domains() > 1 },
			checkShape:    checkNormal,
			checkScale:    func(*LayerConfig) error { return nil },
			writes:        normalWrites,
			precheck:      func(Shape, *LayerConfig) error { return nil },
			buffer:        normalBuffer,
			rdmaBytes:     normalRDMABytes,
			cost:          normalCost,
		},
	}
}

// valid reports a mode the layer runs.
func (m Mode) valid() bool { return m == LL || m == Normal }

// spec is m's entry; a Mode that is not valid reads as LL, as every
// estimate that takes a mode always did (Validate refuses it).
func (m Mode) spec() *layerMode {
	if m == Normal {
		return &modes[Normal]
	}
	return &modes[LL]
}

// String returns the name ParseMode reads.
func (m Mode) String() string {
	if m.valid() {
		return modes[m].name
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ErrChunkMode refuses a chunk asked for where no mode that writes in
// chunks runs: LL writes each selection whole.
var ErrChunkMode = errors.New("only normal mode writes in chunks")

// CheckChunk refuses a chunk given (given) when none of modes is normal,
// as a field error of "chunk" wrapping ErrChunkMode.
func CheckChunk(given bool, modes ...Mode) error {
	if given && !slices.Contains(modes, Normal) {
		return &field.Error{Field: "chunk", Err: ErrChunkMode}
	}
	return nil
}

// ParseMode reads "ll" or "normal".
func ParseMode(s string) (Mode, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for _, m := range []Mode{LL, Normal} {
		if name == modes[m].name || slices.Contains(modes[m].aliases, name) {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown mode %s (want ll or normal)", report.Quote(s))
}

// checkLLIndex refuses an LL layer whose (expert, rank) counts overflow a
// sending warp's index: it keeps expert·R + rank in 32 bits.
func checkLLIndex(c *LayerConfig) error {
	if s := c.Routing.Shape; int64(s.Physical())*int64(s.Ranks) > math.MaxInt32 {
		return field.Errorf("experts", "%d experts on %d ranks make %d (expert, rank) counts, more than the %d an LL layer indexes",
			s.Physical(), s.Ranks, int64(s.Physical())*int64(s.Ranks), math.MaxInt32)
	}
	return nil
}

// checkNormal refuses what normal mode cannot run of a valid shape: across
// nodes what DeepEP's internode kernels cannot, and writes larger than a
// message.
func checkNormal(c *LayerConfig) error {
	if err := c.validateNodes(); err != nil {
		return err
	}
	return normalWrites(c.Routing.Shape, c.Chunk)
}
