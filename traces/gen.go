package traces

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Routing is a synthetic expert-popularity model.
type Routing struct {
	Kind  string  // "uniform", "powerlaw" or "hot"
	Alpha float64 // powerlaw exponent
	Hot   int     // hot: number of hot experts
	Share float64 // hot: fraction of selections they take
}

// ParseRouting reads "uniform", "powerlaw:ALPHA" or "hot:N:SHARE".
func ParseRouting(s string) (Routing, error) {
	parts := strings.Split(s, ":")
	bad := func(why string) (Routing, error) {
		return Routing{}, fmt.Errorf("routing %q: %s (want uniform, powerlaw:ALPHA or hot:N:SHARE)", s, why)
	}
	switch parts[0] {
	case "uniform":
		if len(parts) != 1 {
			return bad("uniform takes no parameters")
		}
		return Routing{Kind: "uniform"}, nil
	case "powerlaw":
		if len(parts) != 2 {
			return bad("want one parameter")
		}
		a, err := strconv.ParseFloat(parts[1], 64)
		if err != nil || a < 0 || a > 100 || math.IsNaN(a) {
			return bad("ALPHA must be a number in [0, 100]")
		}
		return Routing{Kind: "powerlaw", Alpha: a}, nil
	case "hot":
		if len(parts) != 3 {
			return bad("want two parameters")
		}
		n, err := strconv.Atoi(parts[1])
		if err != nil || n < 1 {
			return bad("N must be a positive integer")
		}
		sh, err := strconv.ParseFloat(parts[2], 64)
		if err != nil || sh < 0 || sh > 1 || math.IsNaN(sh) {
			return bad("SHARE must be in [0, 1]")
		}
		return Routing{Kind: "hot", Hot: n, Share: sh}, nil
	}
	return bad("unknown kind")
}

func (r Routing) String() string {
	switch r.Kind {
	case "powerlaw":
		return "powerlaw:" + strconv.FormatFloat(r.Alpha, 'g', -1, 64)
	case "hot":
		return fmt.Sprintf("hot:%d:%s", r.Hot, strconv.FormatFloat(r.Share, 'g', -1, 64))
	}
	return r.Kind
}

// GenOptions describe a synthetic trace.
type GenOptions struct {
	Routing       Routing
	Experts       int
	TopK          int
	Layers        int
	Steps         int
	Ranks         int
	TokensPerRank int
	GPUsPerNode   int
	// Drift perturbs each layer's popularity ranking from the previous
	// layer's: every expert's rank moves by Drift×Experts×N(0,1) before
	// re-sorting. 0 keeps one ranking (hottest experts lowest ids) in every
	// layer; 1 leaves almost nothing of it.
	Drift   float64
	Seed    uint64
	Weights bool // also write top-k weights (softmax-like, descending)
}

// DefaultGenOptions returns a DeepSeek-V3-shaped starting point.
func DefaultGenOptions() GenOptions {
	return GenOptions{Routing: Routing{Kind: "uniform"}, Experts: 256, TopK: 8, Layers: 4, Steps: 1, Ranks: 8, TokensPerRank: 128, Seed: 1}
}

// genTrace produces records on demand; the same options give the same
// records in the same order.
type genTrace struct {
	h     Header
	opt   GenOptions
	order [][]int32 // order[layer][popularity rank] = expert
	alias []aliasTable
	step  int
	layer int
	rank  int
	ids   []int32
	wts   []float32
	taken []bool
}

// Generate returns a Reader over a synthetic trace.
func Generate(opt GenOptions) (Reader, error) {
	o := opt
	switch {
	case o.Ranks < 1:
		return nil, fmt.Errorf("ranks = %d, want at least 1", o.Ranks)
	case o.Steps < 1:
		return nil, fmt.Errorf("steps = %d, want at least 1", o.Steps)
	case o.TokensPerRank < 0:
		return nil, fmt.Errorf("tokens per rank = %d, want at least 0", o.TokensPerRank)
	case o.TopK > o.Experts:
		return nil, fmt.Errorf("top-k = %d is more than experts = %d: a token cannot pick distinct experts", o.TopK, o.Experts)
	case o.Drift < 0 || o.Drift > 1 || math.IsNaN(o.Drift):
		return nil, fmt.Errorf("drift = %v, want [0, 1]", o.Drift)
	case o.Routing.Kind == "hot" && o.Routing.Hot > o.Experts:
		return nil, fmt.Errorf("routing %s: %d hot experts but only %d experts", o.Routing, o.Routing.Hot, o.Experts)
	case o.Routing.Kind != "uniform" && o.Routing.Kind != "powerlaw" && o.Routing.Kind != "hot":
		return nil, fmt.Errorf("routing kind %q is not uniform, powerlaw or hot", o.Routing.Kind)
	}
	if int64(o.TokensPerRank)*int64(o.TopK) > MaxSelections {
		return nil, fmt.Errorf("tokens per rank × top-k = %d is more than %d", int64(o.TokensPerRank)*int64(o.TopK), MaxSelections)
	}
	prov := fmt.Sprintf("synthetic: routing %s, drift %s, seed %d, %d steps × %d ranks × %d tokens", o.Routing,
		strconv.FormatFloat(o.Drift, 'g', -1, 64), o.Seed, o.Steps, o.Ranks, o.TokensPerRank)
	h := Header{Version: Version, IDSpace: Logical, Experts: o.Experts, TopK: o.TopK, EPSize: o.Ranks,
		GPUsPerNode: o.GPUsPerNode, Layers: o.Layers, Steps: o.Steps, Provenance: prov}
	if err := h.Validate(); err != nil {
		return nil, err
	}
	if int64(o.Layers)*int64(o.Experts) > 1<<26 {
		return nil, fmt.Errorf("layers × experts = %d is too large to generate", int64(o.Layers)*int64(o.Experts))
	}
	g := &genTrace{h: h, opt: o, taken: make([]bool, o.Experts)}
	g.order = rankings(o.Experts, o.Layers, o.Drift, o.Seed)
	if o.Routing.Kind == "powerlaw" {
		pop := make([]float64, o.Experts)
		for r := range pop {
			pop[r] = math.Pow(float64(r+1), -o.Routing.Alpha)
		}
		for _, ord := range g.order {
			w := make([]float64, o.Experts)
			for r, e := range ord {
				w[e] = pop[r]
			}
			g.alias = append(g.alias, newAlias(w))
		}
	}
	return g, nil
}

// rankings returns each layer's experts from hottest to coldest: identity
// in layer 0, then a seeded perturbation of the previous layer's.
func rankings(experts, layers int, drift float64, seed uint64) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 0x6472696674)) // "drift"
	out := make([][]int32, layers)
	out[0] = make([]int32, experts)
	for i := range out[0] {
		out[0][i] = int32(i)
	}
	type kv struct {
		key float64
		e   int32
	}
	keys := make([]kv, experts)
	for l := 1; l < layers; l++ {
		for r, e := range out[l-1] {
			keys[r] = kv{float64(r) + drift*float64(experts)*rng.NormFloat64(), e}
		}
		slices.SortStableFunc(keys, func(a, b kv) int { return cmp.Compare(a.key, b.key) })
		out[l] = make([]int32, experts)
		for r := range keys {
			out[l][r] = keys[r].e
		}
	}
	return out
}

func (g *genTrace) Header() Header { return g.h }

func (g *genTrace) Next() (Record, error) {
	o := &g.opt
	if g.step >= o.Steps {
		return Record{}, io.EOF
	}
	s, l, r := g.step, g.layer, g.rank
	if g.rank++; g.rank == o.Ranks {
		g.rank = 0
		if g.layer++; g.layer == o.Layers {
			g.layer, g.step = 0, g.step+1
		}
	}
	rng := recordRNG(o.Seed, s, l, r)
	k := o.TopK
	n := o.TokensPerRank * k
	g.ids = slices.Grow(g.ids[:0], n)[:n]
	for t := range o.TokensPerRank {
		row := g.ids[t*k : (t+1)*k]
		switch o.Routing.Kind {
		case "uniform":
			g.pickUniform(rng, row, g.order[l])
		case "hot":
			g.pickHot(rng, row, g.order[l])
		default:
			g.pickWeighted(rng, row, l)
		}
	}
	var wts []float32
	if o.Weights {
		g.wts = slices.Grow(g.wts[:0], n)[:n]
		if g.wts == nil {
			g.wts = []float32{}
		}
		for t := range o.TokensPerRank {
			softmaxWeights(rng, g.wts[t*k:(t+1)*k])
		}
		wts = g.wts
	}
	return Record{Step: s, Layer: l, Rank: r, TopkIdx: g.ids, TopkWeights: wts}, nil
}

// pickDistinct fills row with distinct draws from pool[lo:hi] (uniform).
func (g *genTrace) pickDistinct(rng *rand.Rand, row []int32, pool []int32) {
	for i := range row {
		for {
			e := pool[rng.IntN(len(pool))]
			if !g.taken[e] {
				g.taken[e] = true
				row[i] = e
				break
			}
		}
	}
}

func (g *genTrace) release(row []int32) {
	for _, e := range row {
		if e >= 0 {
			g.taken[e] = false
		}
	}
}

func (g *genTrace) pickUniform(rng *rand.Rand, row []int32, order []int32) {
	if 2*len(row) > len(order) { // dense: a partial shuffle beats rejection
		perm := rng.Perm(len(order))
		for i := range row {
			row[i] = order[perm[i]]
		}
		return
	}
	g.pickDistinct(rng, row, order)
	g.release(row)
}

// pickHot makes the hot experts take Share of all selections exactly in
// expectation: each token takes h hot experts, h = ⌊Share·k⌋ or one more
// with the probability that makes E[h] = Share·k, then k−h cold ones, each
// group uniform. h is clamped to what the group sizes allow.
func (g *genTrace) pickHot(rng *rand.Rand, row []int32, order []int32) {
	k, n := len(row), g.opt.Routing.Hot
	x := g.opt.Routing.Share * float64(k)
	h := int(x)
	if rng.Float64() < x-float64(h) {
		h++
	}
	h = max(min(h, n, k), k-(len(order)-n))
	hot, cold := order[:n], order[n:]
	g.pickDistinct(rng, row[:h], hot)
	g.pickDistinct(rng, row[h:], cold)
	g.release(row)
}

// pickWeighted draws without replacement with per-draw probability
// proportional to the expert's weight: rejection against an alias table,
// falling back to a linear scan when the chosen experts hold most of the
// mass.
func (g *genTrace) pickWeighted(rng *rand.Rand, row []int32, l int) {
	a := &g.alias[l]
	for i := range row {
		e := int32(-1)
		for range 64 {
			c := a.draw(rng)
			if !g.taken[c] {
				e = c
				break
			}
		}
		if e < 0 {
			var left float64
			for x, w := range a.w {
				if !g.taken[x] {
					left += w
				}
			}
			u := rng.Float64() * left
			for x, w := range a.w {
				if g.taken[x] {
					continue
				}
				e = int32(x)
				if u -= w; u < 0 {
					break
				}
			}
		}
		g.taken[e] = true
		row[i] = e
	}
	g.release(row)
}

// softmaxWeights fills w with positive weights summing to ~1, descending, as
// a router's renormalised top-k softmax would.
func softmaxWeights(rng *rand.Rand, w []float32) {
	var sum float64
	tmp := make([]float64, len(w))
	for i := range tmp {
		tmp[i] = math.Exp(rng.NormFloat64())
		sum += tmp[i]
	}
	slices.Sort(tmp)
	for i := range w {
		w[i] = float32(tmp[len(tmp)-1-i] / sum)
	}
}

// aliasTable samples index i with probability w[i]/Σw in O(1) (Vose).
type aliasTable struct {
	w     []float64
	prob  []float64
	alias []int32
}

func newAlias(w []float64) aliasTable {
	n := len(w)
	var sum float64
	for _, x := range w {
		sum += x
	}
	t := aliasTable{w: w, prob: make([]float64, n), alias: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = x / sum * float64(n)
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.prob[s], t.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		t.prob[i], t.alias[i] = 1, i
	}
	return t
}

func (t *aliasTable) draw(rng *rand.Rand) int32 {
	i := rng.IntN(len(t.prob))
	if rng.Float64() < t.prob[i] {
		return int32(i)
	}
	return t.alias[i]
}
