package routing_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"moebench/routing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want routing.Spec
		err  string // substring of the error; "" when valid
	}{
		{in: "uniform", want: routing.Spec{Kind: routing.Uniform}},
		{in: " Uniform ", want: routing.Spec{Kind: routing.Uniform}},
		{in: "powerlaw:1.2", want: routing.Spec{Kind: routing.PowerLaw, Alpha: 1.2}},
		{in: "powerlaw: 1.01", want: routing.Spec{Kind: routing.PowerLaw, Alpha: 1.01}},
		{in: "imbalanced-ranks:4", want: routing.Spec{Kind: routing.ImbalancedRanks, Ratio: 4}},
		{in: "imbalanced-experts:1", want: routing.Spec{Kind: routing.ImbalancedExperts, Ratio: 1}},
		{in: "", err: "empty kind"},
		{in: "zipf:1", err: `unknown kind "zipf"`},
		{in: "uniform:2", err: "uniform takes no parameter"},
		{in: "powerlaw", err: "needs a value for alpha"},
		{in: "powerlaw:", err: "needs a value for alpha"},
		{in: "powerlaw:abc", err: `alpha "abc" is not a number`},
		{in: "powerlaw:0", err: "alpha: 0"},
		{in: "powerlaw:-1", err: "alpha: -1"},
		{in: "powerlaw:NaN", err: "alpha: NaN"},
		{in: "powerlaw:1000", err: "alpha: 1000"},
		{in: "imbalanced-ranks", err: "needs a value for ratio"},
		{in: "imbalanced-ranks:0.5", err: "ratio: 0.5"},
		{in: "imbalanced-experts:inf", err: "ratio: +Inf"},
		{in: "imbalanced-experts:1:2", err: `ratio "1:2" is not a number`},
		{in: "hot:8:0.5", want: routing.Spec{Kind: routing.Hot, Hot: 8, Share: 0.5}},
		{in: "hot:1:1", want: routing.Spec{Kind: routing.Hot, Hot: 1, Share: 1}},
		{in: "hot", err: "hot needs N:SHARE"},
		{in: "hot:8", err: "hot needs N:SHARE"},
		{in: "hot:x:0.5", err: `hot experts "x" is not a whole number`},
		{in: "hot:0:0.5", err: "hot experts: 0"},
		{in: "hot:4:1.5", err: "share: 1.5"},
		{in: "hot:4:NaN", err: "share: NaN"},
		{in: "hot:4:", err: "needs a value for share"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := routing.Parse(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Parse(%q) error = %v, want it to contain %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			back, err := routing.Parse(got.String())
			if err != nil || back != got {
				t.Fatalf("round trip via %q = %+v, %v; want %+v", got.String(), back, err, got)
			}
		})
	}
	if s := (routing.Spec{}).String(); s != "uniform" {
		t.Errorf("zero spec String = %q, want uniform", s)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"uniform", "powerlaw:1.2", "imbalanced-ranks:4", "imbalanced-experts:2.5", "powerlaw:1e-300", ":", "powerlaw:0x1p-2", "hot:8:0.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sp, err := routing.Parse(s)
		if err != nil {
			return
		}
		if err := sp.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %+v, which does not validate: %v", s, sp, err)
		}
		back, err := routing.Parse(sp.String())
		if err != nil || back != sp {
			t.Fatalf("round trip of %q via %q = %+v, %v; want %+v", s, sp.String(), back, err, sp)
		}
	})
}

// Check rejects specs a layer cannot satisfy.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		spec          routing.Spec
		experts, topk int
		err           string
	}{
		{routing.Spec{Kind: routing.Hot, Hot: 9, Share: 0.5}, 8, 2, "only 8 experts"},
		{routing.Spec{}, 8, 9, "topk: 9 exceeds"},
		{routing.Spec{Kind: routing.PowerLaw}, 8, 2, "alpha: 0"},
		{routing.Spec{Kind: routing.Hot, Hot: 8, Share: 0.5}, 8, 2, ""},
	} {
		err := tt.spec.Check(tt.experts, tt.topk)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%+v.Check(%d, %d) = %v, want %q", tt.spec, tt.experts, tt.topk, err, tt.err)
		}
	}
}

// A sampler's picks are distinct and land on the target loads: hot:4:0.5
// gives the four hot experts half of the selections.
func TestSamplerLoads(t *testing.T) {
	t.Parallel()
	const experts, k, tokens = 32, 4, 20000
	sp := routing.Spec{Kind: routing.Hot, Hot: 4, Share: 0.5}
	s := routing.NewSampler(sp.Loads(experts, 0), k)
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]int32, k)
	hot := 0
	for range tokens {
		s.Token(rng, row)
		for i, e := range row {
			for _, f := range row[:i] {
				if e == f {
					t.Fatalf("expert %d picked twice in %v", e, row)
				}
			}
			if e < 4 {
				hot++
			}
		}
	}
	if got := float64(hot) / (tokens * k); math.Abs(got-0.5) > 0.02 {
		t.Errorf("hot share %.3f, want 0.5", got)
	}
}

func BenchmarkSamplerToken(b *testing.B) {
	sp := routing.Spec{Kind: routing.PowerLaw, Alpha: 1.2}
	s := routing.NewSampler(sp.Loads(256, 0), 8)
	rng := rand.New(rand.NewPCG(1, 2))
	row := make([]int32, 8)
	b.ReportAllocs()
	for b.Loop() {
		s.Token(rng, row)
	}
}
