package moe_test

import (
	"errors"
	"math"
	"testing"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport/preset"
)

// deepseekFFN is DeepSeek-V3's: moe_intermediate_size 2048, one shared
// expert as wide.
var deepseekFFN = moe.FFN{Intermediate: 2048, SharedIntermediate: 2048}

func computeConfig(o moe.Overlap) moe.ComputeConfig {
	return moe.ComputeConfig{FFN: deepseekFFN, FP8: true, Overlap: o, Costs: hw.NewGEMMCosts(profile.MustLoad("p-ib"))}
}

func TestParseOverlap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want moe.Overlap
	}{{"none", moe.OverlapNone}, {"shared-expert", moe.OverlapShared}, {" Two-Batch ", moe.OverlapTwoBatch}, {"hook", moe.OverlapHook}} {
		got, err := moe.ParseOverlap(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseOverlap(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if got.String() != map[moe.Overlap]string{moe.OverlapNone: "none", moe.OverlapShared: "shared-expert", moe.OverlapTwoBatch: "two-batch", moe.OverlapHook: "hook"}[tc.want] {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	_, err := moe.ParseOverlap("tbo")
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "overlap" {
		t.Errorf("ParseOverlap(tbo) = %v, want a field error on overlap", err)
	}
}

// ffn times one rank's experts' FFN from the GEMM model directly: the
// schedule's input, computed apart from the schedule.
func ffn(c moe.ComputeConfig, tokens []int, hidden, inter, sms int, beside bool) sim.Time {
	return c.Costs.FFN(c.FP8, tokens, hidden, inter, sms, beside).Total
}

// perExpert counts each rank's tokens per local expert from the routing.
func perExpert(rt *moe.Routing) [][]int {
	s := rt.Shape
	le := s.LocalExperts()
	out := make([][]int, s.Ranks)
	for r := range out {
		out[r] = make([]int, le)
	}
	for _, row := range rt.Idx {
		for _, p := range row {
			if p >= 0 {
				out[int(p)/le][int(p)%le]++
			}
		}
	}
	return out
}

// With no overlap the layer is every rank's dispatch, its shared and
// routed experts, then a combine that starts when the slowest rank is
// done with its experts.
func TestComputeNoneIsSequential(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 64, 32, 7168)
	cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	c := computeConfig(moe.OverlapNone)
	res, err := moe.RunWithCompute(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	tl := res.Compute
	if tl == nil {
		t.Fatal("no timeline")
	}
	load := perExpert(cfg.Routing)
	var combineStart sim.Time
	for r := range s.Ranks {
		e := res.Dispatch.Ranks[r].Ready + ffn(c, []int{cfg.Routing.Tokens[r]}, s.Hidden, 2048, 0, false) + ffn(c, load[r], s.Hidden, 2048, 0, false)
		combineStart = max(combineStart, e)
	}
	// Dispatch starts on every rank at once, so the shared expert waits
	// for the slowest rank's dispatch only on that rank: recompute with
	// each rank's own.
	var want sim.Time
	for r := range s.Ranks {
		want = max(want, combineStart+res.Combine.Ranks[r].Ready)
	}
	if math.Abs(tl.LayerUs-want.Us()) > 1e-3 {
		t.Errorf("layer %.3f µs, want %.3f", tl.LayerUs, want.Us())
	}
	if got := tl.LayerUs - tl.ComputeUs; math.Abs(tl.ExposedUs-got) > 1e-9 || tl.ExposedUs <= 0 {
		t.Errorf("exposed %.3f µs, want layer - compute = %.3f > 0", tl.ExposedUs, got)
	}
	// The communication result is RunLayer's, unchanged.
	plain, err := moe.RunLayer(layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Dispatch.Time != res.Dispatch.Time || plain.Combine.Time != res.Combine.Time {
		t.Errorf("compute changed the phases: dispatch %v / %v, combine %v / %v", plain.Dispatch.Time, res.Dispatch.Time, plain.Combine.Time, res.Combine.Time)
	}
	if n := len(tl.Critical); n < 3 || tl.Critical[0].Name != "dispatch" || tl.Critical[n-1].Name != "combine" {
		t.Errorf("critical path %+v: want dispatch … combine", tl.Critical)
	}
}

// Two micro-batches hide communication behind compute: the exposed
// communication falls below the sequential schedule's, and so does the
// layer, though each side slows the other down.
func TestTwoBatchHidesCommunication(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 64, 512, 7168)
	s.TopK = 8
	var none, two *moe.Timeline
	for _, o := range []moe.Overlap{moe.OverlapNone, moe.OverlapTwoBatch} {
		cfg := layerConfig(t, s, moe.Normal, "mini-gda", preset.Options{}, moe.Background{}, true)
		res, err := moe.RunWithCompute(cfg, computeConfig(o))
		if err != nil {
			t.Fatal(err)
		}
		if o == moe.OverlapNone {
			none = res.Compute
		} else {
			two = res.Compute
			if len(two.MicroBatches) != 2 {
				t.Fatalf("%d micro-batches", len(two.MicroBatches))
			}
		}
	}
	t.Logf("none: layer %.1f µs, compute %.1f, exposed %.1f, bound by %s", none.LayerUs, none.ComputeUs, none.ExposedUs, none.BoundBy)
	t.Logf("two-batch: layer %.1f µs, compute %.1f, exposed %.1f, bound by %s", two.LayerUs, two.ComputeUs, two.ExposedUs, two.BoundBy)
	for _, st := range two.Critical {
		t.Logf("  %-22s %8.1f → %8.1f", st.Label(), st.StartUs, st.EndUs)
	}
	if two.ExposedUs >= 0.75*none.ExposedUs || two.LayerUs >= none.LayerUs {
		t.Errorf("two-batch: layer %.1f µs, exposed %.1f; none: layer %.1f, exposed %.1f", two.LayerUs, two.ExposedUs, none.LayerUs, none.ExposedUs)
	}
	if two.ComputeSMs != 132-24 {
		t.Errorf("two-batch GEMMs on %d SMs, want 108 (normal mode's 24 taken)", two.ComputeSMs)
	}
}

// Under power-law routing one rank's experts receive far more tokens;
// its GEMM is on the critical path and the timeline names it.
func TestHottestRankIsOnTheCriticalPath(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 64, 128, 7168)
	s.TopK = 8
	r, err := moe.Generate(s, mustSpec(t, "powerlaw:1.2"), 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	cfg.Routing = r
	res, err := moe.RunWithCompute(cfg, computeConfig(moe.OverlapNone))
	if err != nil {
		t.Fatal(err)
	}
	tl := res.Compute
	load := perExpert(r)
	hot, most := 0, 0
	for rank, l := range load {
		n := 0
		for _, m := range l {
			n += m
		}
		if n > most {
			hot, most = rank, n
		}
	}
	t.Logf("hot rank %d: %d tokens at most, experts %.1f µs (mean %.1f); layer %.1f, bound by %s", tl.HotRank, tl.HotTokens, tl.HotExpertUs, tl.MeanExpertUs, tl.LayerUs, tl.BoundBy)
	if tl.HotRank != hot {
		t.Errorf("hot rank %d, want %d (the most routed tokens, %d)", tl.HotRank, hot, most)
	}
	if tl.HotExpertUs < 1.5*tl.MeanExpertUs {
		t.Errorf("hot rank's experts %.1f µs against a mean of %.1f: no skew", tl.HotExpertUs, tl.MeanExpertUs)
	}
	found := false
	for _, st := range tl.Critical {
		if st.Compute && st.Name == "experts" && st.Rank == hot {
			found = true
		}
	}
	if !found {
		t.Errorf("critical path %+v does not pass through rank %d's experts", tl.Critical, hot)
	}
}

func TestComputeValidate(t *testing.T) {
	s := layerShape(16, 8, 64, 32, 7168)
	for _, tc := range []struct {
		name  string
		c     moe.ComputeConfig
		mode  moe.Mode
		field string
	}{
		{"no ffn", moe.ComputeConfig{Overlap: moe.OverlapNone}, moe.LL, "workload"},
		{"hook in normal mode", computeConfig(moe.OverlapHook), moe.Normal, "overlap"},
		{"no schedule", computeConfig(0), moe.LL, "overlap"},
	} {
		err := tc.c.Validate(s, tc.mode)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a field error on %s", tc.name, err, tc.field)
		}
	}
}

func mustSpec(t *testing.T, s string) moe.RoutingSpec {
	t.Helper()
	sp, err := moe.ParseRoutingSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// Several schedules at once share one simulation of the layer and of its
// micro-batches, and give what each gives alone.
func TestRunWithComputesIsEachAlone(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 64, 32, 7168)
	all := []moe.Overlap{moe.OverlapNone, moe.OverlapShared, moe.OverlapTwoBatch, moe.OverlapHook}
	cfg := layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	res, err := moe.RunWithComputes(cfg, computeConfig(0), all)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range all {
		one, err := moe.RunWithCompute(layerConfig(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false), computeConfig(o))
		if err != nil {
			t.Fatal(err)
		}
		a, b := res[i].Compute, one.Compute
		if a.Overlap != o || a.LayerUs != b.LayerUs || a.ExposedUs != b.ExposedUs || a.BoundBy != b.BoundBy {
			t.Errorf("%v: together %+v, alone %+v", o, *a, *b)
		}
	}
}
