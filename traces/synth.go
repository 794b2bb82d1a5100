package traces

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Synthesize makes up tokens whose per-expert selection counts equal counts
// exactly, for sources (SGLang stat counts, EPLB load matrices) that carry
// no token identity. It returns the ids, Tokens×k row-major.
//
// The token count is T = max(⌈S/k⌉, max_e counts[e]) for S selections in
// all: every token picks distinct experts, so an expert chosen more than
// ⌈S/k⌉ times forces extra tokens, and then some slots hold −1. Counts are
// never bent to fit. Selections are dealt column by column (selection i goes
// to token i mod T, slot i div T) from a seeded shuffle of the experts, which
// keeps each token's experts distinct; the tokens are then shuffled so that
// co-selection carries no pattern beyond what the counts force. The result
// depends only on counts, k and rng.
func Synthesize(counts []int64, k int, rng *rand.Rand) ([]int32, error) {
	if k < 1 {
		return nil, fmt.Errorf("top_k = %d, want at least 1", k)
	}
	var s, hi int64
	for e, c := range counts {
		if c < 0 {
			return nil, fmt.Errorf("expert %d: count %d is negative", e, c)
		}
		if c > MaxSelections || s > MaxSelections {
			return nil, fmt.Errorf("more than %d selections; rescale with a token target", MaxSelections)
		}
		s += c
		hi = max(hi, c)
	}
	t := max((s+int64(k)-1)/int64(k), hi)
	if t*int64(k) > MaxSelections {
		return nil, fmt.Errorf("%d tokens × top_k %d is more than %d selections; rescale with a token target", t, k, MaxSelections)
	}
	T := int(t)
	ids := make([]int32, T*k)
	for i := range ids {
		ids[i] = -1
	}
	order := make([]int32, len(counts))
	for i := range order {
		order[i] = int32(i)
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	i := 0
	for _, e := range order {
		for range counts[e] {
			ids[(i%T)*k+i/T] = e
			i++
		}
	}
	// Shuffle whole tokens (rows).
	for a := T - 1; a > 0; a-- {
		b := rng.IntN(a + 1)
		if a != b {
			ra, rb := ids[a*k:(a+1)*k], ids[b*k:(b+1)*k]
			for j := range k {
				ra[j], rb[j] = rb[j], ra[j]
			}
		}
	}
	return ids, nil
}

// Apportion scales weights to integers summing to exactly total by the
// largest-remainder method, ties to the lower index, so that a float load
// matrix (EPLB's weight) becomes selection counts.
func Apportion(weights []float64, total int64) ([]int64, error) {
	var sum float64
	for e, w := range weights {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("expert %d: load %v is not a finite non-negative number", e, w)
		}
		sum += w
	}
	out := make([]int64, len(weights))
	if sum == 0 || total == 0 {
		return out, nil
	}
	type rem struct {
		e int
		r float64
	}
	rems := make([]rem, len(weights))
	var got int64
	for e, w := range weights {
		q := w / sum * float64(total)
		f := math.Floor(q)
		out[e] = int64(f)
		got += out[e]
		rems[e] = rem{e, q - f}
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		switch {
		case a.r > b.r:
			return -1
		case a.r < b.r:
			return 1
		}
		return 0
	})
	// Floors never sum past total, so only the shortfall is dealt out.
	for i := 0; got < total; i = (i + 1) % len(rems) {
		out[rems[i].e]++
		got++
	}
	return out, nil
}

// recordRNG seeds a generator per (seed, step, layer, rank) so that any
// record can be produced alone, in any order, with the same result.
func recordRNG(seed uint64, step, layer, rank int) *rand.Rand {
	h := uint64(step)*0x9e3779b97f4a7c15 ^ uint64(layer)*0xc2b2ae3d27d4eb4f ^ uint64(rank+1)*0x165667b19e3779f9
	return rand.New(rand.NewPCG(seed, h))
}
