package traces

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"moebench/moe"
	"moebench/routing"
)

// GenOptions describe a synthetic trace.
type GenOptions struct {
	// Routing is the popularity model, the same as run's --routing; its
	// loads follow each layer's popularity ranking (see Drift).
	Routing       routing.Spec
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
	return GenOptions{Routing: routing.Spec{Kind: routing.Uniform}, Experts: 256, TopK: 8, Layers: 4, Steps: 1, Ranks: 8, TokensPerRank: 128, Seed: 1}
}

// genTrace produces records on demand; the same options give the same
// records in the same order.
type genTrace struct {
	h     Header
	opt   GenOptions
	order [][]int32 // order[layer][popularity rank] = expert
	loads []float64 // target load by popularity rank
	pick  *routing.Sampler
	built int // the layer pick was built for; -1 = none
	step  int
	layer int
	rank  int
	ids   []int32
	wts   []float32
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
	}
	if err := o.Routing.Check(o.Experts, o.TopK); err != nil {
		return nil, fmt.Errorf("routing %s: %w", o.Routing, err)
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
	g := &genTrace{h: h, opt: o, built: -1}
	g.order = rankings(o.Experts, o.Layers, o.Drift, o.Seed)
	// imbalanced-ranks: the experts of rank 0 before any drift.
	g.loads = o.Routing.Loads(o.Experts, max(1, o.Experts/o.Ranks))
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
	if g.built != l {
		// One sampler at a time: records come layer by layer.
		w := make([]float64, o.Experts)
		for r, e := range g.order[l] {
			w[e] = g.loads[r]
		}
		g.pick, g.built = routing.NewSampler(w, k), l
	}
	for t := range o.TokensPerRank {
		g.pick.Token(rng, g.ids[t*k:(t+1)*k])
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

// CheckLayer checks the layer the trace would feed with the layer's own
// check (moe.Shape.Validate), so that a trace run and replay would refuse
// is refused before it is written; its errors name the field at fault.
func (opt GenOptions) CheckLayer() error {
	s := moe.Shape{Experts: opt.Experts, TopK: opt.TopK, Tokens: opt.TokensPerRank, Ranks: opt.Ranks, GPUsPerNode: opt.GPUsPerNode,
		Hidden: 16, Dispatch: moe.BF16, Combine: moe.BF16}
	if opt.GPUsPerNode == 0 { // unknown: one node
		s.GPUsPerNode = opt.Ranks
	}
	return s.Validate()
}
