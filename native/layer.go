package native

import (
	"fmt"
	"math"
)

// MaxNormalRanks is how many ranks normal mode runs: DeepEP's intranode
// kernels serve the NVLink peers of one node.
const MaxNormalRanks = 8

// check reports a configuration or routing the library would refuse, or
// whose arrays do not match the shape, before anything crosses into C.
func (c LayerConfig) check(rt LayerRouting) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("native layer: %w: "+format, append([]any{ErrBadArgument}, args...)...)
	}
	switch {
	case c.Path < PathDirect || c.Path > PathEFA:
		return bad("unknown path %d", int(c.Path))
	case c.Ranks < 1 || c.GPUs < 1 || c.Ranks%c.GPUs != 0:
		return bad("%d ranks do not spread evenly over %d GPUs", c.Ranks, c.GPUs)
	case c.Tokens < 1 || c.TopK < 1 || c.Hidden < 8 || c.Experts < c.Ranks || c.Experts%c.Ranks != 0:
		return bad("shape %d tokens, top-%d, hidden %d, %d experts on %d ranks is not runnable", c.Tokens, c.TopK, c.Hidden, c.Experts, c.Ranks)
	case c.Reps < 1 || c.Warmup < 0:
		return bad("%d repetitions after %d warm-up", c.Reps, c.Warmup)
	case c.Timeout <= 0:
		return bad("timeout %v", c.Timeout)
	case c.Normal && c.Path != PathDirect:
		return bad("normal mode runs on the direct path, not %v", c.Path)
	case c.Normal && (c.Ranks > MaxNormalRanks || c.SMsPerRank < 2 || c.SMsPerRank%2 != 0):
		return bad("normal mode needs at most %d ranks and an even number of SMs per rank (got %d ranks, %d SMs)", MaxNormalRanks, c.Ranks, c.SMsPerRank)
	case c.Normal && (c.BufTokens < 2 || c.Chunk < 1 || c.Chunk > c.BufTokens/2):
		return bad("normal mode: chunk %d must be between 1 and half the %d-token buffer", c.Chunk, c.BufTokens)
	}
	if name, v := c.widest(); v > math.MaxInt32 {
		return bad("%s %d does not fit the library's 32-bit field", name, v)
	}
	rows := c.Ranks * c.Tokens * c.TopK
	switch {
	case len(rt.TokensPerRank) != c.Ranks:
		return bad("%d token counts for %d ranks", len(rt.TokensPerRank), c.Ranks)
	case len(rt.TopK) != rows || len(rt.Weights) != rows:
		return bad("%d ids and %d weights, want %d ranks × %d tokens × top-%d = %d", len(rt.TopK), len(rt.Weights), c.Ranks, c.Tokens, c.TopK, rows)
	case len(rt.Expected) != c.Ranks*c.Experts:
		return bad("%d expected counts, want %d ranks × %d experts", len(rt.Expected), c.Ranks, c.Experts)
	}
	return nil
}

// widest is the integer field of c farthest from zero, by name, and its
// value: every one crosses into C as an int32 (the timeout in ms).
func (c LayerConfig) widest() (string, int64) {
	name, w := "", int64(0)
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"ranks", int64(c.Ranks)}, {"gpus", int64(c.GPUs)}, {"tokens", int64(c.Tokens)}, {"hidden", int64(c.Hidden)},
		{"top-k", int64(c.TopK)}, {"experts", int64(c.Experts)}, {"sms per rank", int64(c.SMsPerRank)},
		{"nic sms", int64(c.NICSMs)}, {"background sms", int64(c.BackgroundSMs)}, {"qps per peer", int64(c.QPsPerPeer)},
		{"send queue basic blocks", int64(c.SQBBs)}, {"wqes per doorbell", int64(c.PerDoorbell)}, {"dcis", int64(c.DCIs)},
		{"workers", int64(c.Workers)}, {"rings", int64(c.Rings)}, {"batch", int64(c.Batch)}, {"ring entries", int64(c.RingEntries)},
		{"reserved ring", int64(c.ReservedRing0)}, {"chunk", int64(c.Chunk)}, {"buffer tokens", int64(c.BufTokens)},
		{"background warps", int64(c.BgWarps)}, {"background bytes", int64(c.BgBytes)}, {"background channel", int64(c.BgChannel0)},
		{"background channels", int64(c.BgChannels)}, {"background head", int64(c.BgHeadUs)},
		{"warmup", int64(c.Warmup)}, {"reps", int64(c.Reps)}, {"timeout ms", c.Timeout.Milliseconds()},
	} {
		if f.v > w || -f.v > w {
			name, w = f.name, max(f.v, -f.v)
		}
	}
	return name, w
}
