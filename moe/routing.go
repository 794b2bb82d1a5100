package moe

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Routing kinds accepted by ParseRoutingSpec.
const (
	KindUniform           = "uniform"
	KindPowerLaw          = "powerlaw"
	KindImbalancedRanks   = "imbalanced-ranks"
	KindImbalancedExperts = "imbalanced-experts"
)

// maxAlpha keeps power-law weights (1/(i+1)^α) clear of float64 underflow
// for any expert count a shape allows.
const maxAlpha = 100

// RoutingSpec says how synthetic routing picks experts when no trace is at
// hand. The zero value is uniform.
//
// Popularity is a draw weight per logical expert:
//   - uniform: all equal.
//   - powerlaw:α: expert i weighs 1/(i+1)^α, so the hottest experts have the
//     lowest ids and therefore sit on rank 0, the worst case
//     (aiconfigurator uses α ≈ 1.01 for DeepSeek-R1-like, 1.2 for
//     Qwen3-235B-like loads).
//   - imbalanced-ranks:R: the logical experts hosted on rank 0 weigh R, all
//     others 1 (TensorRT-LLM's ImbalancedRanks balance method).
//   - imbalanced-experts:R: expert 0 weighs R, all others 1
//     (ImbalancedExperts).
//
// The weights are target loads: expert i is among a token's top-k with
// probability k·wᵢ/Σw, capped at 1 (the excess goes to the others). Since
// a token samples without replacement, drawing with the raw weights would
// flatten the hot side; Generate draws with −ln(1−πᵢ) instead, which makes
// the inclusion probabilities come out as πᵢ (Rosén's approximation for
// successive sampling, πᵢ ≈ 1−exp(−τwᵢ)). With redundant experts a hot
// logical expert's load is shared by its replicas, which dilutes a rank-0
// imbalance just as redundancy is meant to.
type RoutingSpec struct {
	Kind  string  // one of the Kind constants; "" means uniform
	Alpha float64 // power-law exponent, in (0, 100]
	Ratio float64 // hot-to-other load ratio, at least 1
	// Limit is group-limited gating on top of the popularity; the zero
	// value is none.
	Limit GroupLimit
}

// ParseRoutingSpec reads "uniform", "powerlaw:ALPHA",
// "imbalanced-ranks:RATIO" or "imbalanced-experts:RATIO".
func ParseRoutingSpec(s string) (RoutingSpec, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	arg = strings.TrimSpace(arg)
	var sp RoutingSpec
	switch kind {
	case KindUniform:
		if hasArg {
			return sp, fmt.Errorf("routing %q: uniform takes no parameter, got %q", s, arg)
		}
		return RoutingSpec{Kind: KindUniform}, nil
	case KindPowerLaw:
		a, err := parseParam(s, kind, "alpha", "1.2", arg, hasArg)
		if err != nil {
			return sp, err
		}
		sp = RoutingSpec{Kind: kind, Alpha: a}
	case KindImbalancedRanks, KindImbalancedExperts:
		r, err := parseParam(s, kind, "ratio", "2", arg, hasArg)
		if err != nil {
			return sp, err
		}
		sp = RoutingSpec{Kind: kind, Ratio: r}
	case "":
		return sp, fmt.Errorf("routing %q: empty kind (want uniform, powerlaw:ALPHA, imbalanced-ranks:RATIO or imbalanced-experts:RATIO)", s)
	default:
		return sp, fmt.Errorf("routing %q: unknown kind %q (want uniform, powerlaw:ALPHA, imbalanced-ranks:RATIO or imbalanced-experts:RATIO)", s, kind)
	}
	if err := sp.Validate(); err != nil {
		return RoutingSpec{}, fmt.Errorf("routing %q: %w", s, err)
	}
	return sp, nil
}

func parseParam(s, kind, name, example, arg string, hasArg bool) (float64, error) {
	if !hasArg || arg == "" {
		return 0, fmt.Errorf("routing %q: %s needs a value for %s, e.g. %s:%s", s, kind, name, kind, example)
	}
	v, err := strconv.ParseFloat(arg, 64)
	if err != nil {
		return 0, fmt.Errorf("routing %q: %s %q is not a number", s, name, arg)
	}
	return v, nil
}

// Validate checks the kind, its parameter and the group limit.
func (sp RoutingSpec) Validate() error {
	if err := sp.Limit.Validate(); err != nil {
		return err
	}
	switch sp.Kind {
	case "", KindUniform:
	case KindPowerLaw:
		if !(sp.Alpha > 0 && sp.Alpha <= maxAlpha) {
			return fmt.Errorf("alpha: %v, want 0 < alpha <= %d", sp.Alpha, maxAlpha)
		}
	case KindImbalancedRanks, KindImbalancedExperts:
		if !(sp.Ratio >= 1) || math.IsInf(sp.Ratio, 0) {
			return fmt.Errorf("ratio: %v, want a finite ratio >= 1", sp.Ratio)
		}
	default:
		return fmt.Errorf("kind: unknown routing kind %q", sp.Kind)
	}
	return nil
}

// String returns the form ParseRoutingSpec reads back to the same spec,
// less the group limit, which has its own flags and String.
func (sp RoutingSpec) String() string {
	switch sp.Kind {
	case "", KindUniform:
		return KindUniform
	case KindPowerLaw:
		return sp.Kind + ":" + strconv.FormatFloat(sp.Alpha, 'g', -1, 64)
	default:
		return sp.Kind + ":" + strconv.FormatFloat(sp.Ratio, 'g', -1, 64)
	}
}

// popularity is the draw weight of each logical expert.
func (sp RoutingSpec) popularity(s Shape) []float64 {
	w := make([]float64, s.Experts)
	for i := range w {
		w[i] = 1
	}
	switch sp.Kind {
	case KindPowerLaw:
		for i := range w {
			w[i] = math.Pow(float64(i+1), -sp.Alpha)
		}
	case KindImbalancedRanks:
		// Logical experts 0..LocalExperts-1 have their first replica on rank 0.
		for i := 0; i < min(s.LocalExperts(), s.Experts); i++ {
			w[i] = sp.Ratio
		}
	case KindImbalancedExperts:
		w[0] = sp.Ratio
	}
	return w
}

// maxInclusion keeps a saturated expert's draw weight finite (−ln 1e-6 ≈
// 13.8) so that rejection sampling around it stays cheap.
const maxInclusion = 1 - 1e-6

// drawWeights turns target loads into draw weights for sampling k without
// replacement. Target inclusion probabilities πᵢ = k·tᵢ/Σt are capped at 1,
// the cap's excess spread over the rest in proportion, then each becomes
// −ln(1−πᵢ), so that Σ(1−exp(−wᵢ)) = k and Rosén's approximation gives
// back πᵢ.
func drawWeights(target []float64, k int) []float64 {
	// Scale to a maximum of 1 so that sums cannot overflow for any ratio
	// Validate accepts.
	top := slices.Max(target)
	target = slices.Clone(target)
	for i := range target {
		target[i] /= top
	}
	pi := make([]float64, len(target))
	capped := make([]bool, len(target))
	left := float64(k)
	for {
		var rest float64
		for i, t := range target {
			if !capped[i] {
				rest += t
			}
		}
		more := false
		for i, t := range target {
			if capped[i] {
				continue
			}
			if rest > 0 {
				pi[i] = left * t / rest
			}
			if pi[i] >= 1 {
				pi[i], capped[i] = 1, true
				left--
				more = true
			}
		}
		if !more || left <= 0 {
			break
		}
	}
	w := make([]float64, len(pi))
	for i, p := range pi {
		w[i] = -math.Log1p(-min(p, maxInclusion))
	}
	return w
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

// maxRejects bounds duplicate rejections per draw before falling back to an
// exact scan, which only very skewed weights with top-k near the expert
// count ever need.
const maxRejects = 64

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
	lim, err := spec.Limit.Resolve(shape)
	if err != nil {
		return nil, fmt.Errorf("generate routing: %w", err)
	}
	raw := spec.popularity(shape)
	pop := drawWeights(raw, shape.TopK)
	tab := newAlias(pop)
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
				l := tab.drawDistinct(rng, mark, stamp, pop)
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

// alias is Vose's alias table: one random word draws an index in O(1).
type alias struct {
	keep  []uint64 // keep index i when the low word < keep[i]
	other []int32
}

func newAlias(w []float64) alias {
	n := len(w)
	var total float64
	for _, x := range w {
		total += x
	}
	a := alias{keep: make([]uint64, n), other: make([]int32, n)}
	p := make([]float64, n)
	small := make([]int, 0, n)
	large := make([]int, 0, n)
	for i, x := range w {
		p[i] = x * float64(n) / total
		if p[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.keep[s] = probWord(p[s])
		a.other[s] = int32(l)
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What is left has probability 1 up to rounding.
	for _, i := range append(small, large...) {
		a.keep[i] = math.MaxUint64
		a.other[i] = int32(i)
	}
	return a
}

func probWord(p float64) uint64 {
	if p >= 1 {
		return math.MaxUint64
	}
	if p <= 0 {
		return 0
	}
	return uint64(p * (1 << 64))
}

// draw returns an index with probability proportional to its weight. The
// high word of x·n picks a column, the low word decides between it and its
// alias.
func (a alias) draw(rng *rand.Rand) int {
	hi, lo := bits.Mul64(rng.Uint64(), uint64(len(a.keep)))
	if lo < a.keep[hi] {
		return int(hi)
	}
	return int(a.other[hi])
}

// drawDistinct draws an index not yet marked with stamp. Rejecting
// duplicates is exact sampling without replacement; after maxRejects it
// scans the remaining weights instead, which has the same distribution.
func (a alias) drawDistinct(rng *rand.Rand, mark []uint32, stamp uint32, w []float64) int {
	for range maxRejects {
		if i := a.draw(rng); mark[i] != stamp {
			return i
		}
	}
	var rest float64
	free := 0
	for i, x := range w {
		if mark[i] != stamp {
			rest += x
			free++
		}
	}
	if rest > 0 {
		u := rng.Float64() * rest
		last := -1
		for i, x := range w {
			if mark[i] == stamp || x == 0 {
				continue
			}
			last = i
			if u < x {
				return i
			}
			u -= x
		}
		return last // rounding left u just above the last weight
	}
	// Every remaining weight underflowed: all are equally unlikely.
	j := rng.IntN(free)
	for i := range w {
		if mark[i] != stamp {
			if j == 0 {
				return i
			}
			j--
		}
	}
	panic("unreachable: top-k exceeds experts in a validated shape")
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
