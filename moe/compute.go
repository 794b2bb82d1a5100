package moe

import (
	"fmt"
	"strings"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/sim"
)

// FFN is the feed-forward network each routed expert runs on the tokens
// dispatched to it: SwiGLU, gate and up projections from the hidden size
// to Intermediate each, then down back to the hidden size. Shared experts
// of the same form (SharedIntermediate wide in all, 0 for none) run on
// every token of its own rank.
type FFN struct {
	Intermediate       int
	SharedIntermediate int
}

// Zero reports whether the FFN is unknown: a layer without expert compute.
func (f FFN) Zero() bool { return f.Intermediate == 0 }

// Overlap is how a layer's expert compute and its communication share a
// GPU.
type Overlap uint8

// The schedules. The zero Overlap is invalid.
const (
	// OverlapNone runs dispatch, the shared expert, the routed experts
	// and combine one after another.
	OverlapNone Overlap = iota + 1
	// OverlapShared runs the shared expert beside dispatch, on the SMs
	// the communication kernels leave.
	OverlapShared
	// OverlapTwoBatch splits each rank's tokens into two micro-batches and
	// runs one's communication beside the other's compute, as SGLang's
	// and DeepSeek's serving do; compute has the SMs communication leaves.
	OverlapTwoBatch
	// OverlapHook is two-batch with DeepEP's low-latency receive hook: a
	// phase's kernel holds SMs only while it sends, and receiving takes
	// none, so compute keeps the whole GPU.
	OverlapHook
)

var overlapNames = []string{OverlapNone: "none", OverlapShared: "shared-expert", OverlapTwoBatch: "two-batch", OverlapHook: "hook"}

// String returns the name ParseOverlap reads.
func (o Overlap) String() string {
	if int(o) > 0 && int(o) < len(overlapNames) {
		return overlapNames[o]
	}
	return fmt.Sprintf("Overlap(%d)", uint8(o))
}

// Overlaps lists the schedules' names.
func Overlaps() []string { return overlapNames[1:] }

// ParseOverlap reads a schedule's name.
func ParseOverlap(s string) (Overlap, error) {
	for i, n := range overlapNames {
		if i > 0 && strings.EqualFold(strings.TrimSpace(s), n) {
			return Overlap(i), nil
		}
	}
	return 0, field.Valuef("overlap", s, "want %s", strings.Join(Overlaps(), ", "))
}

// ComputeConfig is the expert compute a layer runs between dispatch and
// combine, and how it overlaps the communication.
type ComputeConfig struct {
	FFN     FFN
	FP8     bool // the experts' GEMMs in FP8 (DeepEP's FP8 dispatch feeds them), else BF16
	Overlap Overlap
	Costs   hw.GEMMCosts
}

// Validate reports the first field that makes the compute impossible.
func (c ComputeConfig) Validate(s Shape, mode Mode) error {
	switch {
	case c.FFN.Zero():
		return field.Errorf("workload", "has no expert FFN size: expert compute needs the model's moe_intermediate_size")
	case c.FFN.Intermediate < 0 || c.FFN.SharedIntermediate < 0:
		return field.Errorf("workload", "negative FFN size")
	case c.Overlap < OverlapNone || c.Overlap > OverlapHook:
		return field.Valuef("overlap", c.Overlap.String(), "want %s", strings.Join(Overlaps(), ", "))
	case c.Overlap == OverlapHook && mode != LL:
		return field.Valuef("overlap", "hook", "the receive hook is DeepEP's low-latency mode's; normal mode has none")
	case (c.Overlap == OverlapTwoBatch || c.Overlap == OverlapHook) && s.Tokens < 2:
		return field.Valuef("overlap", c.Overlap.String(), "%d token a rank cannot split into two micro-batches", s.Tokens)
	case c.Costs.SMs < 1 || c.Costs.Of(c.FP8).TileM < 1 || c.Costs.Of(c.FP8).TileN < 1:
		return field.Errorf("profile", "its compute constants are missing (gpu.sms, gemm's tiles)")
	}
	return nil
}

// expertLoad is each rank's tokens per local expert: the rows its grouped
// GEMM runs.
func expertLoad(rt *Routing) [][]int {
	s := rt.Shape
	le := s.LocalExperts()
	flat := make([]int, s.Ranks*le)
	for _, row := range rt.Idx {
		for _, p := range row {
			if p >= 0 {
				flat[p]++
			}
		}
	}
	out := make([][]int, s.Ranks)
	for r := range out {
		out[r] = flat[r*le : (r+1)*le : (r+1)*le]
	}
	return out
}

// rankCompute is one rank's expert work, µs.
type rankCompute struct {
	routed, shared sim.Time
	maxTokens      int
}

// computeTimes times each rank's routed and shared experts on sms SMs.
func computeTimes(rt *Routing, c *ComputeConfig, sms int, beside bool, slow func(int) float64) []rankCompute {
	s := rt.Shape
	out := make([]rankCompute, s.Ranks)
	for r, tokens := range expertLoad(rt) {
		f := c.Costs.FFN(c.FP8, tokens, s.Hidden, c.FFN.Intermediate, sms, beside)
		rc := rankCompute{routed: f.Total, maxTokens: f.Up.TokensPerExpert}
		if c.FFN.SharedIntermediate > 0 && rt.Tokens[r] > 0 {
			rc.shared = c.Costs.FFN(c.FP8, []int{rt.Tokens[r]}, s.Hidden, c.FFN.SharedIntermediate, sms, beside).Total
		}
		k := slow(r)
		rc.routed, rc.shared = scale(rc.routed, k), scale(rc.shared, k)
		out[r] = rc
	}
	return out
}
