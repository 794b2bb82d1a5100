// Package routing is moebench's one synthetic expert-popularity model: the
// --routing syntax that run, sweep, size, replay's synthetic comparison and
// trace gen all accept, its validation, and the sampler that draws each
// token's distinct experts from it.
//
// In: a spec string ("uniform", "powerlaw:1.2", "imbalanced-ranks:4",
// "imbalanced-experts:4", "hot:8:0.5"). Out: a Spec, its target load per
// expert (Spec.Loads), and the draw weights and alias table that make a
// token's k picks without replacement land on those loads (DrawWeights,
// Alias, Sampler). moe places the picks on ranks; traces writes them to a
// file; neither has a generator of its own.
package routing

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
)

// Kinds accepted by Parse.
const (
	Uniform           = "uniform"
	PowerLaw          = "powerlaw"
	ImbalancedRanks   = "imbalanced-ranks"
	ImbalancedExperts = "imbalanced-experts"
	Hot               = "hot"
)

// Syntax lists the forms Parse reads, for help texts and errors.
const Syntax = "uniform, powerlaw:ALPHA, imbalanced-ranks:RATIO, imbalanced-experts:RATIO or hot:N:SHARE"

// MaxAlpha keeps power-law weights (1/(i+1)^α) clear of float64 underflow
// for any expert count a shape allows.
const MaxAlpha = 100

// Spec says how synthetic routing picks experts. The zero value is uniform.
//
// Popularity is a target load per expert, by popularity rank (the hottest
// experts have the lowest ids unless a trace's drift reorders them):
//   - uniform: all equal.
//   - powerlaw:α: expert i weighs 1/(i+1)^α (aiconfigurator uses α ≈ 1.01
//     for DeepSeek-R1-like, 1.2 for Qwen3-235B-like loads).
//   - imbalanced-ranks:R: the experts of rank 0 weigh R, all others 1
//     (TensorRT-LLM's ImbalancedRanks balance method).
//   - imbalanced-experts:R: expert 0 weighs R, all others 1
//     (ImbalancedExperts).
//   - hot:N:SHARE: experts 0..N-1 together take SHARE of all selections,
//     the rest share what is left evenly.
//
// The loads are targets: expert i is among a token's top-k with probability
// k·wᵢ/Σw, capped at 1 (the excess goes to the others), so one expert takes
// at most 1/k of the selections.
type Spec struct {
	Kind  string  // one of the kinds; "" means uniform
	Alpha float64 // powerlaw: exponent, in (0, MaxAlpha]
	Ratio float64 // imbalanced-*: hot-to-other load ratio, at least 1
	Hot   int     // hot: number of hot experts, at least 1
	Share float64 // hot: their share of all selections, in [0, 1]
}

// Parse reads one of the forms in Syntax; the result is valid.
func Parse(s string) (Spec, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	arg = strings.TrimSpace(arg)
	var sp Spec
	switch kind {
	case Uniform:
		if hasArg {
			return sp, fmt.Errorf("routing %s: uniform takes no parameter, got %s", report.Quote(s), report.Quote(arg))
		}
		return Spec{Kind: Uniform}, nil
	case PowerLaw:
		a, err := param(s, kind, "alpha", "1.2", arg, hasArg)
		if err != nil {
			return sp, err
		}
		sp = Spec{Kind: kind, Alpha: a}
	case ImbalancedRanks, ImbalancedExperts:
		r, err := param(s, kind, "ratio", "2", arg, hasArg)
		if err != nil {
			return sp, err
		}
		sp = Spec{Kind: kind, Ratio: r}
	case Hot:
		n, share, ok := strings.Cut(arg, ":")
		if !hasArg || !ok {
			return sp, fmt.Errorf("routing %s: hot needs N:SHARE, e.g. hot:8:0.5", report.Quote(s))
		}
		h, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			return sp, fmt.Errorf("routing %s: hot experts %s is not a whole number", report.Quote(s), report.Quote(n))
		}
		sh, err := param(s, kind, "share", "8:0.5", share, true)
		if err != nil {
			return sp, err
		}
		sp = Spec{Kind: kind, Hot: h, Share: sh}
	case "":
		return sp, fmt.Errorf("routing %s: empty kind (want %s)", report.Quote(s), Syntax)
	default:
		return sp, fmt.Errorf("routing %s: unknown kind %s (want %s)", report.Quote(s), report.Quote(kind), Syntax)
	}
	if err := sp.Validate(); err != nil {
		return Spec{}, fmt.Errorf("routing %s: %w", report.Quote(s), err)
	}
	return sp, nil
}

func param(s, kind, name, example, arg string, hasArg bool) (float64, error) {
	arg = strings.TrimSpace(arg)
	if !hasArg || arg == "" {
		return 0, fmt.Errorf("routing %s: %s needs a value for %s, e.g. %s:%s", report.Quote(s), kind, name, kind, example)
	}
	v, err := strconv.ParseFloat(arg, 64)
	if err != nil {
		return 0, fmt.Errorf("routing %s: %s %s is not a number", report.Quote(s), name, report.Quote(arg))
	}
	return v, nil
}

// Validate checks the kind and its parameters.
func (sp Spec) Validate() error {
	switch sp.Kind {
	case "", Uniform:
	case PowerLaw:
		if !(sp.Alpha > 0 && sp.Alpha <= MaxAlpha) {
			return fmt.Errorf("alpha: %v, want 0 < alpha <= %d (alpha 0 is uniform)", sp.Alpha, MaxAlpha)
		}
	case ImbalancedRanks, ImbalancedExperts:
		if !(sp.Ratio >= 1) || math.IsInf(sp.Ratio, 0) {
			return fmt.Errorf("ratio: %v, want a finite ratio >= 1", sp.Ratio)
		}
	case Hot:
		if sp.Hot < 1 {
			return fmt.Errorf("hot experts: %d, want at least 1", sp.Hot)
		}
		if !(sp.Share >= 0 && sp.Share <= 1) {
			return fmt.Errorf("share: %v, want 0 <= share <= 1", sp.Share)
		}
	default:
		return fmt.Errorf("kind: unknown routing kind %q", sp.Kind)
	}
	return nil
}

// Check validates the spec against a layer of experts logical experts of
// which top-k are picked per token.
func (sp Spec) Check(experts, topk int) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	if sp.Kind == Hot && sp.Hot > experts {
		return fmt.Errorf("hot experts: %d, but the layer has only %d experts", sp.Hot, experts)
	}
	if topk > experts {
		return field.Errorf("topk", "%d exceeds the %d experts (a token picks distinct experts)", topk, experts)
	}
	return nil
}

// String returns the form Parse reads back to the same spec.
func (sp Spec) String() string {
	switch sp.Kind {
	case "", Uniform:
		return Uniform
	case PowerLaw:
		return sp.Kind + ":" + strconv.FormatFloat(sp.Alpha, 'g', -1, 64)
	case Hot:
		return fmt.Sprintf("hot:%d:%s", sp.Hot, strconv.FormatFloat(sp.Share, 'g', -1, 64))
	default:
		return sp.Kind + ":" + strconv.FormatFloat(sp.Ratio, 'g', -1, 64)
	}
}

// Loads is the target load of each of experts experts, by popularity rank;
// rank0 is how many experts rank 0 hosts (for imbalanced-ranks).
func (sp Spec) Loads(experts, rank0 int) []float64 {
	w := make([]float64, experts)
	for i := range w {
		w[i] = 1
	}
	switch sp.Kind {
	case PowerLaw:
		for i := range w {
			w[i] = math.Pow(float64(i+1), -sp.Alpha)
		}
	case ImbalancedRanks:
		for i := 0; i < min(rank0, experts); i++ {
			w[i] = sp.Ratio
		}
	case ImbalancedExperts:
		w[0] = sp.Ratio
	case Hot:
		h := min(sp.Hot, experts)
		for i := range w {
			if i < h {
				w[i] = sp.Share / float64(h)
			} else {
				w[i] = (1 - sp.Share) / float64(experts-h)
			}
		}
	}
	return w
}

// maxInclusion keeps a saturated expert's draw weight finite (−ln 1e-6 ≈
// 13.8) so that rejection sampling around it stays cheap.
const maxInclusion = 1 - 1e-6

// DrawWeights turns target loads into draw weights for sampling k without
// replacement. Target inclusion probabilities πᵢ = k·tᵢ/Σt are capped at 1,
// the cap's excess spread over the rest in proportion, then each becomes
// −ln(1−πᵢ), so that Σ(1−exp(−wᵢ)) = k and Rosén's approximation for
// successive sampling (πᵢ ≈ 1−exp(−τwᵢ)) gives back πᵢ. Drawing with the
// raw loads instead would flatten the hot side.
func DrawWeights(target []float64, k int) []float64 {
	// Scale to a maximum of 1 so that sums cannot overflow for any ratio
	// Validate accepts.
	top := slices.Max(target)
	target = slices.Clone(target)
	for i := range target {
		if top > 0 {
			target[i] /= top
		}
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

// Alias is Vose's alias table: one random word draws an index in O(1).
type Alias struct {
	keep  []uint64 // keep index i when the low word < keep[i]
	other []int32
}

// NewAlias builds the table for weights w (not all zero).
func NewAlias(w []float64) Alias {
	n := len(w)
	var total float64
	for _, x := range w {
		total += x
	}
	a := Alias{keep: make([]uint64, n), other: make([]int32, n)}
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

// Draw returns an index with probability proportional to its weight. The
// high word of x·n picks a column, the low word decides between it and its
// alias.
func (a Alias) Draw(rng *rand.Rand) int {
	hi, lo := bits.Mul64(rng.Uint64(), uint64(len(a.keep)))
	if lo < a.keep[hi] {
		return int(hi)
	}
	return int(a.other[hi])
}

// maxRejects bounds duplicate rejections per draw before falling back to an
// exact scan, which only very skewed weights with top-k near the expert
// count ever need.
const maxRejects = 64

// DrawDistinct draws an index not yet marked with stamp; w are the weights
// the table was built from, and at least one index must be unmarked.
// Rejecting duplicates is exact sampling without replacement; after
// maxRejects it scans the remaining weights instead, which has the same
// distribution.
func (a Alias) DrawDistinct(rng *rand.Rand, mark []uint32, stamp uint32, w []float64) int {
	for range maxRejects {
		if i := a.Draw(rng); mark[i] != stamp {
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
	// Every remaining weight is zero or underflowed: all are equally
	// unlikely.
	j := rng.IntN(free)
	for i := range w {
		if mark[i] != stamp {
			if j == 0 {
				return i
			}
			j--
		}
	}
	panic("routing: DrawDistinct with every index taken")
}

// Sampler draws tokens' distinct top-k picks from target loads.
type Sampler struct {
	w     []float64
	tab   Alias
	mark  []uint32
	stamp uint32
}

// NewSampler prepares draws of k distinct indices whose inclusion
// probabilities follow the target loads (see DrawWeights).
func NewSampler(target []float64, k int) *Sampler {
	w := DrawWeights(target, k)
	return &Sampler{w: w, tab: NewAlias(w), mark: make([]uint32, len(w))}
}

// Token fills row with distinct indices for one token.
func (s *Sampler) Token(rng *rand.Rand, row []int32) {
	s.stamp++
	if s.stamp == 0 { // wrapped: old marks could collide
		clear(s.mark)
		s.stamp = 1
	}
	for j := range row {
		i := s.tab.DrawDistinct(rng, s.mark, s.stamp, s.w)
		s.mark[i] = s.stamp
		row[j] = int32(i)
	}
}
