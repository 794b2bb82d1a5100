package moe

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"moebench/routing"
)

// RoutingSpec is the synthetic routing of a layer: the popularity model
// every command shares (routing.Spec, the --routing syntax) and, on top,
// group-limited gating. The zero value is uniform without a limit.
//
// Generate draws with routing's weights; with redundant experts a hot
// logical expert's load is shared by its replicas, which dilutes a rank-0
// imbalance just as redundancy is meant to.
type RoutingSpec struct {
	routing.Spec
	// Limit is group-limited gating on top of the popularity; the zero
	// value is none.
	Limit GroupLimit
}

// ParseRoutingSpec reads the --routing syntax (routing.Syntax); the group
// limit has flags of its own.
func ParseRoutingSpec(s string) (RoutingSpec, error) {
	sp, err := routing.Parse(s)
	return RoutingSpec{Spec: sp}, err
}

// Validate checks the popularity and the group limit.
func (sp RoutingSpec) Validate() error {
	if err := sp.Limit.Validate(); err != nil {
		return err
	}
	return sp.Spec.Validate()
}

// popularity is the target load of each logical expert of s.
func (sp RoutingSpec) popularity(s Shape) []float64 {
	// Logical experts 0..LocalExperts-1 have their first replica on rank 0.
	return sp.Spec.Loads(s.Experts, s.LocalExperts())
}

// Routing is the top-k choice of every token on every source rank.
//
// Idx[r] is row-major [Tokens[r]][TopK] of physical expert ids, -1 for no
// selection; Weights[r] has the same shape. A Routing from Generate or
// FromTopk is valid; layouts and checks assume so.
type Routing struct {
	Shape   Shape
	Tokens  []int       // tokens on each source rank, at most Shape.Tokens
	Idx     [][]int32   // per rank, [Tokens[r]*TopK] physical ids or -1
	Weights [][]float32 // per rank, same shape as Idx
}

// TokensOf is the number of tokens source rank r holds.
func (r *Routing) TokensOf(rank int) int { return r.Tokens[rank] }

// Selections counts the valid (non -1) entries of Idx.
func (r *Routing) Selections() int {
	n := 0
	for _, row := range r.Idx {
		for _, e := range row {
			if e >= 0 {
				n++
			}
		}
	}
	return n
}

// newRouting allocates Idx and Weights as one flat block each, so a large
// routing costs two allocations rather than one per rank.
func newRouting(s Shape, tokens []int) *Routing {
	total := 0
	for _, t := range tokens {
		total += t * s.TopK
	}
	idx := make([]int32, total)
	wts := make([]float32, total)
	r := &Routing{Shape: s, Tokens: tokens, Idx: make([][]int32, s.Ranks), Weights: make([][]float32, s.Ranks)}
	off := 0
	for rank, t := range tokens {
		n := t * s.TopK
		r.Idx[rank] = idx[off : off+n : off+n]
		r.Weights[rank] = wts[off : off+n : off+n]
		off += n
	}
	return r
}

// Generate draws a synthetic routing. The result depends only on shape,
// spec and seed. Each token picks TopK distinct logical experts, sampled
// without replacement from spec's popularity, and each pick is mapped to a
// replica with Shape.PhysicalFor. Weights are u², u uniform on 1..65536,
// normalized to 1 per token and sorted descending over the slots: a leading
// expert and a tail, like a router's sorted softmax scores. Integer scores
// keep the weights bit-identical on every platform, and so the Hash.
//
// With a group limit (spec.Limit) each token first draws its groups, then
// its experts among the chosen groups only; without one the draws are
// exactly those of earlier versions, so their hashes hold.
func Generate(shape Shape, spec RoutingSpec, seed uint64) (*Routing, error) {
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("generate routing: shape: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("generate routing: spec %s: %w", spec, err)
	}
	if err := spec.Check(shape.Experts, shape.TopK); err != nil {
		return nil, fmt.Errorf("generate routing: spec %s: %w", spec, err)
	}
	lim, err := spec.Limit.Resolve(shape)
	if err != nil {
		return nil, fmt.Errorf("generate routing: %w", err)
	}
	raw := spec.popularity(shape)
	pop := routing.DrawWeights(raw, shape.TopK)
	tab := routing.NewAlias(pop)
	var grp *groupDraw
	if lim.On() {
		grp = newGroupDraw(lim, raw)
	}
	tokens := make([]int, shape.Ranks)
	for i := range tokens {
		tokens[i] = shape.Tokens
	}
	rt := newRouting(shape, tokens)
	k := shape.TopK
	// mark[l] == stamp: l is taken by the current token. Validate caps the
	// token count well below the stamp's range, so it never wraps.
	mark := make([]uint32, shape.Experts)
	var stamp uint32
	score := make([]uint64, k)
	pcg := rand.NewPCG(0, 0)
	rng := rand.New(pcg)
	for rank := range shape.Ranks {
		// One stream per rank: ranks could be generated in parallel
		// without changing the result.
		pcg.Seed(seed, uint64(rank)+0x9e3779b97f4a7c15)
		idx, wts := rt.Idx[rank], rt.Weights[rank]
		for t := range shape.Tokens {
			stamp++
			g := rank*shape.Tokens + t
			row := idx[t*k : t*k+k]
			if grp != nil {
				// Experts outside the token's groups count as taken.
				grp.exclude(rng, mark, stamp)
			}
			for j := range row {
				l := tab.DrawDistinct(rng, mark, stamp, pop)
				mark[l] = stamp
				row[j] = int32(shape.PhysicalFor(l, g))
			}
			var sum uint64
			for j := range score {
				u := 1 + rng.Uint64N(1<<16)
				score[j] = u * u
				sum += score[j]
			}
			sortDesc(score)
			for j, v := range score {
				wts[t*k+j] = float32(float64(v) / float64(sum))
			}
		}
	}
	return rt, nil
}

func sortDesc(v []uint64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] > v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// FromTopk builds a routing from explicit per-rank top-k choices, as a trace
// records them: idx[r] is row-major [tokens][TopK] of physical expert ids
// (-1 = no selection), weights[r] the same shape. A rank may hold fewer
// tokens than Shape.Tokens but not more. weights may be nil, or nil for a
// rank, to weigh a token's valid selections equally. Errors name the rank,
// token and slot at fault.
func FromTopk(shape Shape, idx [][]int64, weights [][]float32) (*Routing, error) {
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("routing from top-k: shape: %w", err)
	}
	if len(idx) != shape.Ranks {
		return nil, fmt.Errorf("routing from top-k: idx has %d ranks, the shape has %d", len(idx), shape.Ranks)
	}
	if weights != nil && len(weights) != shape.Ranks {
		return nil, fmt.Errorf("routing from top-k: weights have %d ranks, the shape has %d", len(weights), shape.Ranks)
	}
	k := shape.TopK
	tokens := make([]int, shape.Ranks)
	for r, row := range idx {
		if len(row)%k != 0 {
			return nil, fmt.Errorf("routing from top-k: rank %d: %d ids are not a whole number of top-%d rows", r, len(row), k)
		}
		tokens[r] = len(row) / k
		if tokens[r] > shape.Tokens {
			return nil, fmt.Errorf("routing from top-k: rank %d: %d tokens exceed the shape's %d tokens per rank", r, tokens[r], shape.Tokens)
		}
		if weights != nil && weights[r] != nil && len(weights[r]) != len(row) {
			return nil, fmt.Errorf("routing from top-k: rank %d: %d weights for %d ids", r, len(weights[r]), len(row))
		}
	}
	rt := newRouting(shape, tokens)
	phys := int64(shape.Physical())
	seen := make([]uint32, shape.Physical()) // seen[p] == stamp: p taken by this token
	var stamp uint32
	slotOf := make([]int, shape.Physical())
	for r, row := range idx {
		var wrow []float32
		if weights != nil {
			wrow = weights[r]
		}
		for t := range tokens[r] {
			stamp++
			valid := 0
			for j := range k {
				e := row[t*k+j]
				if e < -1 || e >= phys {
					return nil, fmt.Errorf("routing from top-k: rank %d token %d slot %d: expert %d out of range [-1, %d)", r, t, j, e, phys)
				}
				rt.Idx[r][t*k+j] = int32(e)
				if e < 0 {
					continue
				}
				valid++
				if seen[e] == stamp {
					return nil, fmt.Errorf("routing from top-k: rank %d token %d slot %d: expert %d already selected in slot %d", r, t, j, e, slotOf[e])
				}
				seen[e], slotOf[e] = stamp, j
			}
			for j := range k {
				i := t*k + j
				switch {
				case wrow != nil:
					w := wrow[i]
					if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
						return nil, fmt.Errorf("routing from top-k: rank %d token %d slot %d: weight %v is not finite", r, t, j, w)
					}
					rt.Weights[r][i] = w
				case rt.Idx[r][i] >= 0:
					rt.Weights[r][i] = 1 / float32(valid)
				}
			}
		}
	}
	return rt, nil
}

// Hash is 16 hex digits of FNV-1a 64 over the shape, the token counts, the
// ids and the weights' bits: equal hashes show two runs used the same
// routing.
func (r *Routing) Hash() string {
	h := fnv.New64a()
	buf := make([]byte, 0, 4096)
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	s := r.Shape
	for _, v := range []int{s.Experts, s.Physical(), s.TopK, s.Hidden, s.Tokens, s.Ranks, s.GPUsPerNode, int(s.Dispatch), int(s.Combine)} {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
	}
	for rank := range r.Idx {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(r.Tokens[rank]))
		for i, e := range r.Idx[rank] {
			if len(buf) > cap(buf)-8 {
				flush()
			}
			buf = binary.LittleEndian.AppendUint32(buf, uint32(e))
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(r.Weights[rank][i]))
		}
	}
	flush()
	return fmt.Sprintf("%016x", h.Sum64())
}
