package sweep

import (
	"errors"
	"fmt"

	"moebench/internal/field"
	"moebench/moe"
)

// ErrNativeDispatch refuses a dispatch dtype the native engine's kernels
// do not run, and ErrNativeChunk a chunk asked for in LL mode there.
var (
	ErrNativeDispatch = errors.New("the native engine's kernels dispatch fp8 or bf16")
	ErrNativeChunk    = errors.New("the native engine chunks normal mode only")
)

// RanksError refuses ranks the native engine cannot run: it runs GPUs ×
// Shared (ranks sharing each GPU) ranks.
type RanksError struct{ Ranks, GPUs, Shared int }

func (e *RanksError) Error() string {
	return fmt.Sprintf("the native engine runs %d GPUs × %d ranks on each = %d ranks", e.GPUs, e.Shared, e.GPUs*e.Shared)
}

// OnGPUs is points on the native engine, one host: each on each count of
// GPUs and of ranks sharing each GPU. ranksGiven keeps a point's ranks,
// which must then be the GPUs × the ranks on each; chunkGiven asks for a
// chunk, which only normal mode writes. Its errors name the field.
func OnGPUs(points []Point, gpus, shared []int, ranksGiven, chunkGiven bool) ([]Point, error) {
	var out []Point
	for _, c := range points {
		if c.Mode != moe.LL && c.Mode != moe.Normal {
			return nil, field.Valuef("mode", c.Mode, "the native engine runs ll and normal mode")
		}
		// Refused here, before the library loads: its kernels cast to FP8
		// or copy BF16, and would run another message size than asked.
		if d := c.Shape.Dispatch; d != moe.FP8 && d != moe.BF16 {
			return nil, field.Valuef("dispatch-dtype", d, "%w", ErrNativeDispatch)
		}
		if d := c.Shape.Combine; d != moe.BF16 {
			return nil, field.Valuef("combine-dtype", d, "the native engine's kernels combine in bf16")
		}
		if chunkGiven && c.Mode != moe.Normal {
			return nil, field.Errorf("chunk", "%w", ErrNativeChunk)
		}
		for _, g := range gpus {
			for _, v := range shared {
				c2 := c
				c2.Shape.Ranks, c2.Shape.GPUsPerNode, c2.GPUs = g*v, 1, g
				if ranksGiven && c.Shape.Ranks != g*v {
					return nil, field.Valuef("ranks", c.Shape.Ranks, "%w", &RanksError{Ranks: c.Shape.Ranks, GPUs: g, Shared: v})
				}
				if err := c2.Shape.Validate(); err != nil {
					return nil, fmt.Errorf("%w (%d GPUs × %d virtual ranks)", err, g, v)
				}
				out = append(out, c2)
			}
		}
	}
	return out, nil
}
