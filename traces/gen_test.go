package traces

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"moebench/routing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func inspectGen(t *testing.T, o GenOptions) *Summary {
	t.Helper()
	r, err := Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Inspect(r)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestGenerateRouting(t *testing.T) {
	t.Parallel()
	base := DefaultGenOptions()
	base.Layers, base.Ranks, base.TokensPerRank = 2, 4, 512
	for _, tc := range []struct {
		name    string
		routing string
		check   func(t *testing.T, s *Summary)
	}{
		{"uniform is even", "uniform", func(t *testing.T, s *Summary) {
			if imb := s.Layers[0].Imbalance; imb > 1.6 {
				t.Errorf("imbalance %.2f", imb)
			}
		}},
		{"powerlaw hottest lowest ids", "powerlaw:1.2", func(t *testing.T, s *Summary) {
			if s.Layers[0].Imbalance < 5 {
				t.Errorf("imbalance %.2f", s.Layers[0].Imbalance)
			}
		}},
		{"hot takes its share", "hot:16:0.5", func(t *testing.T, s *Summary) {
			// 16 hot experts share half of all selections: each ≈ 1/32.
			if sh := s.Layers[0].Top1Share; math.Abs(sh-1.0/32) > 0.006 {
				t.Errorf("top-1 share %.4f, want ≈ %.4f", sh, 1.0/32)
			}
		}},
		{"imbalanced-experts weighs expert 0", "imbalanced-experts:8", func(t *testing.T, s *Summary) {
			// 8 of the 263 load units of 256 experts, top-8: 8·8/263.
			if sh := s.Layers[0].Top1Share; math.Abs(sh-8.0/263) > 0.004 {
				t.Errorf("top-1 share %.4f, want ≈ %.4f", sh, 8.0/263)
			}
		}},
		{"imbalanced-ranks weighs rank 0's experts", "imbalanced-ranks:4", func(t *testing.T, s *Summary) {
			// Rank 0 of 4 hosts 64 experts at weight 4: 256 of 448 units.
			if s.Layers[0].Imbalance < 1.7 {
				t.Errorf("imbalance %.2f", s.Layers[0].Imbalance)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := base
			var err error
			if o.Routing, err = routing.Parse(tc.routing); err != nil {
				t.Fatal(err)
			}
			tc.check(t, inspectGen(t, o))
		})
	}
}

// TestGeneratePowerlawOrder: without drift, expert 0 is the hottest in
// every layer; with full drift the layers disagree.
func TestGeneratePowerlawOrder(t *testing.T) {
	t.Parallel()
	o := DefaultGenOptions()
	o.Routing = routing.Spec{Kind: routing.PowerLaw, Alpha: 1.5}
	// Top-1, so that the hottest experts are not all picked by every token.
	o.TopK, o.Layers, o.Ranks, o.TokensPerRank = 1, 3, 2, 256
	_, recs := genRecords(t, o)
	hottest := func(drift float64) []int {
		o.Drift = drift
		_, recs = genRecords(t, o)
		c := make([][]int, o.Layers)
		for l := range c {
			c[l] = make([]int, o.Experts)
		}
		for _, r := range recs {
			for _, e := range r.TopkIdx {
				c[r.Layer][e]++
			}
		}
		out := make([]int, o.Layers)
		for l := range c {
			for e := range c[l] {
				if c[l][e] > c[l][out[l]] {
					out[l] = e
				}
			}
		}
		return out
	}
	for l, e := range hottest(0) {
		if e != 0 {
			t.Errorf("drift 0: layer %d hottest expert %d, want 0", l, e)
		}
	}
	h := hottest(1)
	if h[0] != 0 || (h[1] == 0 && h[2] == 0) {
		t.Errorf("drift 1: hottest experts %v, want layer 0 = 0 and later layers moved", h)
	}
}

// TestInspectGolden fixes the table rendering; go test -update rewrites it.
func TestInspectGolden(t *testing.T) {
	t.Parallel()
	o := DefaultGenOptions()
	o.Routing = routing.Spec{Kind: routing.PowerLaw, Alpha: 1.2}
	o.Layers, o.Ranks, o.TokensPerRank, o.Steps, o.Drift = 4, 4, 64, 2, 0.05
	var b bytes.Buffer
	if err := inspectGen(t, o).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "inspect_table.golden")
	if *update {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("inspect table differs from %s (go test -update rewrites it):\n%s", golden, b.String())
	}
}
