package moe_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/routing"
	"moebench/traces"
)

func mustGenerate(t testing.TB, s moe.Shape, spec string, seed uint64) *moe.Routing {
	t.Helper()
	sp, err := moe.ParseRoutingSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := moe.Generate(s, sp, seed)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGenerateDeterministic(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"uniform", "powerlaw:1.2", "imbalanced-ranks:3", "imbalanced-experts:8"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			a := mustGenerate(t, v3(), spec, 1).Hash()
			b := mustGenerate(t, v3(), spec, 1).Hash()
			c := mustGenerate(t, v3(), spec, 2).Hash()
			if len(a) != 16 {
				t.Fatalf("Hash = %q, want 16 hex digits", a)
			}
			if a != b {
				t.Errorf("same seed: hashes %s and %s differ", a, b)
			}
			if a == c {
				t.Errorf("seeds 1 and 2 give the same hash %s", a)
			}
		})
	}
	// The hash covers the shape, not only the ids.
	s := v3()
	s.Hidden = 4096
	if mustGenerate(t, v3(), "uniform", 1).Hash() == mustGenerate(t, s, "uniform", 1).Hash() {
		t.Error("hidden 7168 and 4096 give the same hash")
	}
}

// checkRouting verifies the invariants every generated routing keeps.
func checkRouting(t *testing.T, r *moe.Routing) {
	t.Helper()
	s := r.Shape
	for rank := range s.Ranks {
		for tok := range r.TokensOf(rank) {
			seen := map[int]bool{}
			var sum float64
			for j := range s.TopK {
				e := int(r.Idx[rank][tok*s.TopK+j])
				if e < 0 || e >= s.Physical() {
					t.Fatalf("rank %d token %d slot %d: expert %d out of range", rank, tok, j, e)
				}
				l := s.LogicalOf(e)
				if seen[l] {
					t.Fatalf("rank %d token %d: logical expert %d picked twice", rank, tok, l)
				}
				seen[l] = true
				w := r.Weights[rank][tok*s.TopK+j]
				if j > 0 && w > r.Weights[rank][tok*s.TopK+j-1] {
					t.Fatalf("rank %d token %d: weights not descending", rank, tok)
				}
				sum += float64(w)
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("rank %d token %d: weights sum to %v", rank, tok, sum)
			}
		}
	}
}

func TestGenerateInvariants(t *testing.T) {
	t.Parallel()
	redundant := v3()
	redundant.PhysicalExperts = 288
	full := moe.Shape{Experts: 8, TopK: 8, Hidden: 4096, Tokens: 64, Ranks: 8, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	mixtral := full
	mixtral.TopK = 2
	tests := []struct {
		name string
		s    moe.Shape
		spec string
	}{
		{"v3-uniform", v3(), "uniform"},
		{"v3-powerlaw", v3(), "powerlaw:1.2"},
		{"redundant-powerlaw", redundant, "powerlaw:1.01"},
		{"redundant-ranks", redundant, "imbalanced-ranks:4"},
		// Top-k equal to the expert count under extreme skew forces the
		// exact fallback once rejection stalls.
		{"all-experts-extreme", full, "powerlaw:100"},
		{"all-experts-hot-expert", full, "imbalanced-experts:1e12"},
		{"mixtral", mixtral, "powerlaw:1.2"},
		{"huge-ratio", v3(), "imbalanced-ranks:1.7e308"},
		{"tiny-alpha", v3(), "powerlaw:1e-300"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRouting(t, mustGenerate(t, tt.s, tt.spec, 7))
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	bad := v3()
	bad.TopK = 0
	if _, err := moe.Generate(bad, moe.RoutingSpec{}, 1); err == nil || !strings.Contains(err.Error(), "topk: 0") {
		t.Errorf("bad shape: error = %v, want one naming top-k", err)
	}
	if _, err := moe.Generate(v3(), moe.RoutingSpec{Spec: routing.Spec{Kind: routing.PowerLaw}}, 1); err == nil || !strings.Contains(err.Error(), "alpha") {
		t.Errorf("bad spec: error = %v, want one naming alpha", err)
	}
}

// rankLoads counts selections received per rank and per physical expert.
func rankLoads(r *moe.Routing) (ranks, experts []float64) {
	s := r.Shape
	ranks = make([]float64, s.Ranks)
	experts = make([]float64, s.Physical())
	for _, row := range r.Idx {
		for _, e := range row {
			if e >= 0 {
				ranks[s.RankOfExpert(int(e))]++
				experts[e]++
			}
		}
	}
	return ranks, experts
}

func meanOf(v []float64) float64 {
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

func TestPowerLawSkew(t *testing.T) {
	t.Parallel()
	s := v3()
	s.Tokens = 4096
	imbalance := map[string]float64{}
	for _, spec := range []string{"powerlaw:1.0", "powerlaw:1.2"} {
		ranks, experts := rankLoads(mustGenerate(t, s, spec, 3))
		for r := 1; r < len(ranks); r++ {
			if ranks[r] > ranks[r-1] {
				t.Errorf("%s: rank %d receives %v > rank %d's %v", spec, r, ranks[r], r-1, ranks[r-1])
			}
		}
		// At α=1.2 the hottest experts saturate (in nearly every token's
		// top-8), so allow near-ties with expert 0.
		slack := 0.001 * float64(s.Ranks*s.Tokens)
		for e := 1; e < len(experts); e++ {
			if experts[e] > experts[0]+slack {
				t.Errorf("%s: expert %d receives %v, more than expert 0's %v", spec, e, experts[e], experts[0])
			}
		}
		imbalance[spec] = ranks[0] / meanOf(ranks)
		t.Logf("%s: rank-0 load / mean = %.3f", spec, imbalance[spec])
	}
	if imbalance["powerlaw:1.2"] <= imbalance["powerlaw:1.0"] {
		t.Errorf("rank-0 imbalance α=1.2: %.3f, not above α=1.0: %.3f", imbalance["powerlaw:1.2"], imbalance["powerlaw:1.0"])
	}
}

func TestImbalancedRatios(t *testing.T) {
	t.Parallel()
	s := v3()
	s.Tokens = 2048
	tests := []struct {
		spec  string
		ratio float64
		ranks bool // rank 0 vs the other ranks, else expert 0 vs the others
	}{
		{"imbalanced-ranks:2", 2, true},
		{"imbalanced-ranks:4", 4, true},
		{"imbalanced-experts:3", 3, false},
		{"imbalanced-experts:8", 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			ranks, experts := rankLoads(mustGenerate(t, s, tt.spec, 5))
			v := experts
			if tt.ranks {
				v = ranks
			}
			got := v[0] / meanOf(v[1:])
			t.Logf("hot/mean ratio %.3f, asked %v", got, tt.ratio)
			// Sampling without replacement flattens the hot side a little.
			if math.Abs(got-tt.ratio)/tt.ratio > 0.1 {
				t.Errorf("hot/mean ratio = %.3f, want %v within 10%%", got, tt.ratio)
			}
		})
	}
}

func TestFromTopk(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 8, TopK: 2, Hidden: 4096, Tokens: 3, Ranks: 2, GPUsPerNode: 2, Dispatch: moe.FP8, Combine: moe.BF16}
	good := [][]int64{{0, 5, -1, 7, 2, 3}, {4, -1}}
	r, err := moe.FromTopk(s, good, nil)
	if err != nil {
		t.Fatalf("FromTopk: %v", err)
	}
	if r.TokensOf(0) != 3 || r.TokensOf(1) != 1 || r.Selections() != 6 {
		t.Fatalf("tokens %v, selections %d; want [3 1], 6", r.Tokens, r.Selections())
	}
	if w := r.Weights[0][0:4]; w[0] != 0.5 || w[1] != 0.5 || w[2] != 0 || w[3] != 1 {
		t.Fatalf("default weights %v, want [0.5 0.5 0 1]", w)
	}
	tests := []struct {
		name string
		idx  [][]int64
		w    [][]float32
		err  string
	}{
		{"rank-count", [][]int64{{0, 1}}, nil, "idx has 1 ranks, the shape has 2"},
		{"weight-ranks", good, [][]float32{{}}, "weights have 1 ranks"},
		{"ragged", [][]int64{{0, 1, 2}, {}}, nil, "rank 0: 3 ids are not a whole number of top-2 rows"},
		{"too-many-tokens", [][]int64{{}, {0, 1, 0, 1, 0, 1, 0, 1}}, nil, "rank 1: 4 tokens exceed the shape's 3"},
		{"weight-length", good, [][]float32{nil, {1}}, "rank 1: 1 weights for 2 ids"},
		{"out-of-range", [][]int64{{0, 1, 2, 8}, {}}, nil, "rank 0 token 1 slot 1: expert 8 out of range [-1, 8)"},
		{"below-minus-one", [][]int64{{}, {-2, 1}}, nil, "rank 1 token 0 slot 0: expert -2"},
		{"duplicate", [][]int64{{0, 1, 6, 6}, {}}, nil, "rank 0 token 1 slot 1: expert 6 already selected in slot 0"},
		{"nan-weight", [][]int64{{0, 1}, {}}, [][]float32{{0.5, float32(math.NaN())}, nil}, "rank 0 token 0 slot 1: weight NaN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := moe.FromTopk(s, tt.idx, tt.w)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("FromTopk error = %v, want it to contain %q", err, tt.err)
			}
		})
	}
}

// Generated and replayed routings hash alike when they hold the same data.
func TestFromTopkHashMatchesGenerate(t *testing.T) {
	t.Parallel()
	g := mustGenerate(t, v3(), "powerlaw:1.2", 9)
	idx := make([][]int64, len(g.Idx))
	for r, row := range g.Idx {
		for _, e := range row {
			idx[r] = append(idx[r], int64(e))
		}
	}
	f, err := moe.FromTopk(g.Shape, idx, g.Weights)
	if err != nil {
		t.Fatal(err)
	}
	if f.Hash() != g.Hash() {
		t.Fatalf("replayed hash %s, generated %s", f.Hash(), g.Hash())
	}
}

func ExampleGenerate() {
	shape := moe.Shape{
		Experts: 256, PhysicalExperts: 288, TopK: 8, Hidden: 7168,
		Tokens: 128, Ranks: 16, GPUsPerNode: 8,
		Dispatch: moe.FP8, Combine: moe.BF16,
	}
	spec, err := moe.ParseRoutingSpec("powerlaw:1.2")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := moe.Generate(shape, spec, 42)
	if err != nil {
		fmt.Println(err)
		return
	}
	again, _ := moe.Generate(shape, spec, 42)
	fmt.Println("selections:", r.Selections())
	fmt.Println("hash:", r.Hash())
	fmt.Println("reproducible:", again.Hash() == r.Hash())
	fmt.Println("dispatch message:", shape.LLDispatchBytes(), "B")
	// Output:
	// selections: 16384
	// hash: 4e0fb0c6b5cfba3e
	// reproducible: true
	// dispatch message: 7408 B
}

// trace gen and run share one generator: for the same spec and shape, the
// per-expert loads of a generated trace and of a run's routing agree.
func TestTraceGenMatchesGenerate(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 64, TopK: 4, Tokens: 1024, Ranks: 4, GPUsPerNode: 4, Hidden: 16, Dispatch: moe.BF16, Combine: moe.BF16}
	for _, spec := range []string{"powerlaw:1.2", "imbalanced-ranks:4", "imbalanced-experts:8", "hot:4:0.5"} {
		sp, err := moe.ParseRoutingSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := moe.Generate(s, sp, 3)
		if err != nil {
			t.Fatal(err)
		}
		run := make([]float64, s.Experts)
		for _, row := range rt.Idx {
			for _, e := range row {
				run[e]++
			}
		}
		o := traces.DefaultGenOptions()
		o.Routing, o.Experts, o.TopK, o.Ranks, o.TokensPerRank, o.Layers, o.Seed = sp.Spec, s.Experts, s.TopK, s.Ranks, s.Tokens, 1, 3
		src, err := traces.Generate(o)
		if err != nil {
			t.Fatal(err)
		}
		gen := make([]float64, s.Experts)
		for {
			rec, err := src.Next()
			if err != nil {
				break
			}
			for _, e := range rec.TopkIdx {
				gen[e]++
			}
		}
		n := float64(s.Ranks * s.Tokens * s.TopK)
		for e := range run {
			if d := math.Abs(run[e]-gen[e]) / n; d > 0.006 {
				t.Errorf("%s: expert %d takes %.4f of selections in run, %.4f in trace gen", spec, e, run[e]/n, gen[e]/n)
			}
		}
	}
}
