package sweep_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"moebench/budget"
	"moebench/moe"
	"moebench/profile"
	"moebench/sweep"
	"moebench/transport"
	"moebench/transport/preset"
)

func presets(t *testing.T, names ...string) []preset.Preset {
	t.Helper()
	var ps []preset.Preset
	for _, n := range names {
		p, err := preset.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

func pib(t *testing.T) *profile.Profile {
	t.Helper()
	p, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Run gives each point on each preset, in serial order, the result of
// running its layer alone, and moves progress by every point's whole
// estimate.
func TestRunIsEachLayerInOrder(t *testing.T) {
	t.Parallel()
	base := pib(t)
	g := sweep.Grid{Shape: shape(16, 8), Tokens: []int{4, 8}, Modes: []moe.Mode{moe.LL}, Backgrounds: []sweep.Background{{Name: "none"}}}
	pts, err := g.Points()
	if err != nil {
		t.Fatal(err)
	}
	if err := sweep.OnProfiles(base, pts, false); err != nil {
		t.Fatal(err)
	}
	spec, _ := moe.ParseRoutingSpec("uniform")
	s := &sweep.Sweep{Command: "sweep", Points: pts, Presets: presets(t, "mini-gda", "mini-proxy"),
		Inputs: &sweep.Inputs{Base: base, Routing: spec, Seed: 1}, Varies: func(n string) bool { return n == "tokens" }}
	pl, err := s.Place()
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	items, ran, err := s.Run(pl, func(n int, _ string) { moved += n })
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 4 || len(ran) != 4 || moved != pl.Total || pl.Total == 0 {
		t.Fatalf("%d items, %d ran, progress %d of %d", len(items), len(ran), moved, pl.Total)
	}
	for i, it := range items {
		c, p := pts[i/2], s.Presets[i%2]
		if it.Point.Shape.Tokens != c.Shape.Tokens || it.Preset.Name != p.Name {
			t.Errorf("item %d: %d tokens on %s, want %d on %s", i, it.Point.Shape.Tokens, it.Preset.Name, c.Shape.Tokens, p.Name)
		}
		if len(it.Swept) != 1 || it.Swept[0].Name != "tokens" {
			t.Errorf("item %d swept %v, want tokens", i, it.Swept)
		}
		rt, err := moe.Generate(c.Shape, spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		layer, reserved := moe.Channels(c.Shape, c.Mode, 0, c.Background)
		tr, err := p.Build(nil, transport.Needs{Channels: layer, Reserved: reserved})
		if err != nil {
			t.Fatal(err)
		}
		want, err := moe.RunLayer(moe.LayerConfig{Routing: rt, Mode: c.Mode, Transport: tr, Profile: base, NVLink: c.NVLink})
		if err != nil {
			t.Fatal(err)
		}
		if it.Result.Dispatch.Time != want.Dispatch.Time || it.Result.Combine.Time != want.Combine.Time {
			t.Errorf("item %d: dispatch %v, combine %v; alone %v, %v", i, it.Result.Dispatch.Time, it.Result.Combine.Time, want.Dispatch.Time, want.Combine.Time)
		}
	}
}

// A point the budget cannot hold is refused before anything runs; one a
// library's limit refuses is a *CheckError, the caller's input.
func TestRefusals(t *testing.T) {
	t.Parallel()
	base := pib(t)
	pts := []sweep.Point{{Shape: shape(256, 16), Mode: moe.Normal, NVLink: true}}
	s := &sweep.Sweep{Command: "run", Points: pts, Presets: presets(t, "deepep-v1"), Budget: budget.Budget{Bytes: 1 << 20}}
	var ex *budget.Exceeded
	if _, err := s.Place(); !errors.As(err, &ex) {
		t.Errorf("1 MiB budget: %v, want *budget.Exceeded", err)
	}
	_, err := s.Layer.Check(pts[0], base, s.Presets[0])
	var ce *sweep.CheckError
	var le *moe.LimitError
	if !errors.As(err, &ce) || !errors.Is(err, sweep.ErrInput) || !errors.As(err, &le) || le.Limit.Name != "deepep-v1.normal_ranks" {
		t.Fatalf("EP256 normal on deepep-v1: %v, want a check error of deepep-v1.normal_ranks", err)
	}
	if ce.Preset.Name != "deepep-v1" || ce.Point.Shape.Ranks != 256 {
		t.Errorf("the error names %s at %d ranks", ce.Preset.Name, ce.Point.Shape.Ranks)
	}
	s.Over = []string{"deepep-v1.normal_ranks"}
	if _, err := s.Layer.Check(pts[0], base, s.Presets[0]); err != nil {
		t.Errorf("over the limit: %v", err)
	}
	u, err := s.Layer.Headroom(pts[0], base, s.Presets[0])
	if err != nil {
		t.Fatal(err)
	}
	notes := sweep.OverNotes([]sweep.Item{{Preset: s.Presets[0], Limits: u}})
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "RUN OVER A LIMIT: deepep-v1 over deepep-v1.normal_ranks: 256 ranks, more than 160") {
		t.Errorf("notes %q", notes)
	}
}

func TestEachOverlap(t *testing.T) {
	t.Parallel()
	a, b := &moe.Result{}, &moe.Result{}
	a.Compute, b.Compute = &moe.Timeline{Overlap: moe.OverlapNone}, &moe.Timeline{Overlap: moe.OverlapHook}
	items := []sweep.Item{{Result: a, More: []*moe.Result{b}}}
	if got := sweep.EachOverlap(items, false); len(got) != 1 {
		t.Errorf("one schedule: %d items", len(got))
	}
	got := sweep.EachOverlap(items, true)
	if len(got) != 2 || got[0].Result != a || got[1].Result != b || got[1].More != nil {
		t.Fatalf("%+v", got)
	}
	if got[0].Swept[0].Value != "none" || got[1].Swept[0].Value != "hook" || len(items[0].Swept) != 0 {
		t.Errorf("swept %v, %v; the item's own %v", got[0].Swept, got[1].Swept, items[0].Swept)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	spec, _ := moe.ParseRoutingSpec("uniform")
	nvl := shape(144, 128)
	nvl.GPUsPerNode, nvl.NVLDomain = 4, 72
	for _, tc := range []struct {
		name string
		pts  []sweep.Point
		h    sweep.Header
		want []string
	}{
		{"one point", []sweep.Point{{Shape: shape(16, 128), Mode: moe.LL, Background: moe.Background{}}}, sweep.Header{Workload: "deepseek-v3", Limit: "no group limit"},
			[]string{"workload deepseek-v3: 256 experts, top-8, hidden 7168, 128 tokens/rank, EP16 = 2 nodes × 8 GPUs, ll mode, NVLink off",
				"routing uniform, no group limit; background none"}},
		{"a sweep over NVLink domains, with sets", []sweep.Point{{Shape: nvl, Mode: moe.LL, NVLink: true}, {Shape: nvl, Mode: moe.LL}},
			sweep.Header{Workload: "deepseek-v3", Limit: "no group limit", Sets: "SETS"},
			[]string{"workload deepseek-v3: 256 experts, top-8, hidden 7168, 128 tokens/rank, EP144 = 36 nodes × 4 GPUs, 2 NVLink domains of 72 GPUs, ll mode, NVLink on",
				"routing uniform, no group limit; background none", "SETS", "sweep: 2 configurations (first shown above)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if d := diff(tc.want, sweep.Describe(tc.h, tc.pts, spec)); d != "" {
				t.Error(d)
			}
		})
	}
}

// A capacity refusal names the inputs that set what it exceeds.
func TestCulprits(t *testing.T) {
	t.Parallel()
	ll, normal := sweep.Point{Shape: shape(64, 128), Mode: moe.LL}, sweep.Point{Shape: shape(64, 4096), Mode: moe.Normal}
	withQPs := ll
	withQPs.Knobs = transport.Settings{"qps-per-peer": "4"}
	for _, tc := range []struct {
		name string
		c    sweep.Point
		err  *moe.CapacityError
		want []sweep.Input
	}{
		{"LL memory", ll, &moe.CapacityError{Kind: moe.CapacityMemory}, []sweep.Input{{"experts", "256", ""}, {"tokens", "128", ""}, {"hidden", "7168", ""}}},
		{"normal memory", normal, &moe.CapacityError{Kind: moe.CapacityMemory}, []sweep.Input{{"hidden", "7168", ""}, {"ranks", "64", ""}, {"gpus-per-node", "8", ""}}},
		{"DCIs at the preset's", ll, &moe.CapacityError{Kind: moe.CapacityQueues, Queues: "DCIs", Knob: "dcis"}, []sweep.Input{{"dcis", "", ""}}},
		{"a mechanism's queues", ll, &moe.CapacityError{Kind: moe.CapacityQueues, Queues: "rings"}, []sweep.Input{{"ranks", "64", ""}}},
		{"QPs per peer set", withQPs, &moe.CapacityError{Kind: moe.CapacityQueues}, []sweep.Input{{"ranks", "64", ""}, {"qps-per-peer", "4", ""}}},
		{"LL QPs", ll, &moe.CapacityError{Kind: moe.CapacityQueues}, []sweep.Input{{"ranks", "64", ""}, {"experts", "256", " (4 per rank, a QP to each peer for each)"}}},
		{"normal QPs", normal, &moe.CapacityError{Kind: moe.CapacityQueues}, []sweep.Input{{"ranks", "64", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := &sweep.CheckError{Point: tc.c, Err: fmt.Errorf("wrapped: %w", tc.err)}
			if d := diff(tc.want, e.Culprits()); d != "" {
				t.Error(d)
			}
		})
	}
	if got := (&sweep.CheckError{Point: ll, Err: moe.ErrQueueDepth}).Culprits(); got != nil {
		t.Errorf("not a capacity error: %v", got)
	}
}

// A model run's header adds, after Describe's lines and in this order,
// the fabric where it is not the reference switch, the faults and the
// compute, each only when there is one.
func TestAccount(t *testing.T) {
	t.Parallel()
	base := pib(t)
	spec, _ := moe.ParseRoutingSpec("uniform")
	plain := []sweep.Point{{Shape: shape(16, 16), Mode: moe.LL}}
	leaf := []sweep.Point{{Shape: shape(16, 16), Mode: moe.LL, Sets: []string{"topo.tiers=2"}}}
	h := sweep.Header{Workload: "deepseek-v3", Limit: "no group limit"}
	full := h
	full.Faults = sweep.Faults{Specs: []string{"loss:1e-4"}, Seed: 1}
	full.Compute = sweep.Compute{Workload: "deepseek-v3", Scheds: []moe.Overlap{moe.OverlapNone}, Layers: 1}
	for _, tc := range []struct {
		name   string
		h      sweep.Header
		pts    []sweep.Point
		prefix []string // the lines after Describe's, by their start
	}{
		{"the reference switch, healthy, communication alone", h, plain, nil},
		{"a leaf/spine fabric, faults and compute", full, leaf, []string{"fabric: rail-optimized leaf/spine", "faults loss:0.0001@host,loss:0.0001@spine; fault seed 1", "experts' compute: SwiGLU FFN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := sweep.Account(tc.h, base, tc.pts, spec, nil)
			if len(got) != 2+len(tc.prefix) {
				t.Fatalf("%d lines, want %d: %q", len(got), 2+len(tc.prefix), got)
			}
			for i, p := range tc.prefix {
				if !strings.HasPrefix(got[2+i], p) {
					t.Errorf("line %d = %q, want it to start %q", 2+i, got[2+i], p)
				}
			}
		})
	}
}

// CheckAll refuses before any layer is built: one point's refusal as it
// is, one among several naming the point, a constant that does not apply
// as the caller's input.
func TestCheckAll(t *testing.T) {
	t.Parallel()
	base, gda := pib(t), presets(t, "mini-gda")
	ok, deep := sweep.Point{Shape: shape(16, 16), Mode: moe.LL}, sweep.Point{Shape: shape(16, 100000), Mode: moe.LL}
	bad := sweep.Point{Shape: shape(16, 16), Mode: moe.LL, Sets: []string{"no.such=1"}}
	l := sweep.Layer{}
	if err := l.CheckAll(base, []sweep.Point{ok, ok}, gda); err != nil {
		t.Errorf("two points that fit: %v", err)
	}
	err := l.CheckAll(base, []sweep.Point{deep}, gda)
	var ce *sweep.CheckError
	if pe := (*sweep.PointError)(nil); errors.As(err, &pe) || !errors.As(err, &ce) || !errors.Is(err, moe.ErrQueueDepth) {
		t.Errorf("one point too deep: %v, want a CheckError of the queue depth naming no point", err)
	}
	err = l.CheckAll(base, []sweep.Point{ok, deep}, gda)
	if pe := (*sweep.PointError)(nil); !errors.As(err, &pe) || pe.Point.Shape.Tokens != 100000 || !errors.Is(err, moe.ErrQueueDepth) {
		t.Errorf("the second of two points too deep: %v, want a PointError naming it", err)
	}
	if err := l.CheckAll(base, []sweep.Point{bad}, gda); !errors.Is(err, sweep.ErrInput) {
		t.Errorf("an unknown constant: %v, want the caller's input", err)
	}
}
