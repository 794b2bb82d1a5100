package sweep_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"moebench/budget"
	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/replay"
	"moebench/sweep"
	"moebench/traces"
	"moebench/transport/preset"
	"moebench/workloads"
)

// nopSink takes a replay and keeps nothing.
type nopSink struct{}

func (nopSink) Begin() error                { return nil }
func (nopSink) Group(*replay.Group) error   { return nil }
func (nopSink) End(*replay.Aggregate) error { return nil }

// twoRanks is one (step, layer) of 8 experts, top-2, on two ranks: rank 0
// sends tokens, rank 1 one token.
func twoRanks(tokens int) *traces.Memory {
	r := &traces.Memory{H: traces.Header{Version: 1, IDSpace: traces.Logical, Experts: 8, TopK: 2, EPSize: 2, GPUsPerNode: 2, Layers: 1}}
	var ids []int32
	for i := range tokens {
		ids = append(ids, int32(i%8), int32((i+3)%8))
	}
	r.Records = []traces.Record{{Rank: 0, TopkIdx: ids}, {Rank: 1, TopkIdx: []int32{1, 6}}}
	return r
}

// replayer is a replay of src on mini-gda in LL mode, hidden 512.
func replayer(t *testing.T, src traces.Reader, edit func(r *sweep.Replayer)) (*sweep.Replayer, error) {
	t.Helper()
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	hidden := 512
	o := replay.Options{Name: "t.bin", Workload: w, Hidden: &hidden, MaxOpen: 4, Notes: []string{"the caller's"}}
	if _, err := sweep.ReplayOptions(&o, "ll", "none", false); err != nil {
		t.Fatal(err)
	}
	r := &sweep.Replayer{Presets: presets(t, "mini-gda"), Profile: pib(t), Background: sweep.Background{Name: "none"}}
	if edit != nil {
		edit(r)
	}
	return r, r.Open(o, src)
}

// ReplayOptions parses the mode and background into the options and
// refuses, by field, a name not known, a chunk without normal mode and a
// count out of range.
func TestReplayOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mode, bg string
		chunk          bool
		maxOpen        int
		field          string // "" for no error
		is             error  // the refusal's sentinel, if any
	}{
		{name: "ll", mode: "ll", bg: "none", maxOpen: 1},
		{name: "normal with a chunk and bulk beside", mode: "normal", bg: "bulk:64:shared", chunk: true, maxOpen: 1},
		{name: "unknown mode", mode: "fast", bg: "none", maxOpen: 1, field: "mode", is: sweep.ErrInput},
		{name: "unknown background", mode: "ll", bg: "noise", maxOpen: 1, field: "background", is: sweep.ErrInput},
		{name: "a chunk in LL", mode: "ll", bg: "none", chunk: true, maxOpen: 1, field: "chunk", is: moe.ErrChunkMode},
		{name: "no group may wait", mode: "ll", bg: "none", maxOpen: 0, field: "max-open", is: replay.ErrInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := replay.Options{MaxOpen: tc.maxOpen}
			bg, err := sweep.ReplayOptions(&o, tc.mode, tc.bg, tc.chunk)
			if tc.field != "" {
				if fs := field.Fields(err); len(fs) == 0 || fs[0].Field != tc.field || !errors.Is(err, tc.is) || !errors.Is(err, sweep.ErrInput) {
					t.Fatalf("got %v, want a refusal of %s (%v)", err, tc.field, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := workloads.ParseBackground(tc.bg)
			if o.Mode.String() != tc.mode || o.Background != want || bg.Name != tc.bg || bg.Value != want {
				t.Errorf("mode %s, background %+v (%+v); want %s, %s", o.Mode, o.Background, bg, tc.mode, tc.bg)
			}
		})
	}
}

// Open resolves the layer from the trace and puts the faults in the
// header's account before the caller's notes; a fault past the layer's
// ranks is refused.
func TestReplayerOpen(t *testing.T) {
	t.Parallel()
	r, err := replayer(t, twoRanks(4), func(r *sweep.Replayer) { r.Faults = sweep.Faults{Specs: []string{"slow:1:2"}, Seed: 1} })
	if err != nil {
		t.Fatal(err)
	}
	if s := r.Shape(); s.Ranks != 2 || s.Experts != 8 || s.Hidden != 512 {
		t.Errorf("shape %+v, want EP2 of 8 experts, hidden 512", s)
	}
	notes := r.Notes()
	fi, ci := slices.IndexFunc(notes, func(n string) bool { return strings.HasPrefix(n, "faults ") }), slices.Index(notes, "the caller's")
	if fi < 0 || ci != fi+1 {
		t.Errorf("notes %q: want the faults' then the caller's", notes)
	}
	_, err = replayer(t, twoRanks(4), func(r *sweep.Replayer) { r.Faults = sweep.Faults{Specs: []string{"slow:2:2"}, Seed: 1} })
	if fs := field.Fields(err); len(fs) == 0 || fs[0].Field != "fault" || !errors.Is(err, sweep.ErrInput) {
		t.Errorf("a slow rank 2 of 2: got %v, want the fault's refusal", err)
	}
}

// ran is what a replay's one group ran into.
type ran struct {
	rt     *moe.Routing
	res    *moe.Result
	err    error
	failed []*sweep.Failure
}

// RunGroup runs a group as the layer alone runs its point, and refuses
// what the budget cannot hold and queues too shallow for its tokens,
// typed; a layer failing under its faults is a result, its phases heard.
func TestReplayerRunGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		tokens int
		edit   func(r *sweep.Replayer)
		want   func(t *testing.T, g ran)
	}{
		{name: "healthy", tokens: 4, want: func(t *testing.T, g ran) {
			if g.err != nil || len(g.failed) != 0 {
				t.Fatalf("got %v, failures %v; want a result", g.err, g.failed)
			}
			// The layer alone, on the group's routing at its busiest
			// rank's 4 tokens.
			alone, err := sweep.Layer{}.RunEach(sweep.Point{Shape: g.rt.Shape, Mode: moe.LL}, g.rt, pib(t), presets(t, "mini-gda")[0], false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res := g.res; res.Shape.Tokens != 4 || res.Events != alone[0].Events || res.RouteHash != alone[0].RouteHash || !res.Correct {
				t.Errorf("group: %d tokens, %d events, route %s; alone: %d events, route %s", res.Shape.Tokens, res.Events, res.RouteHash, alone[0].Events, alone[0].RouteHash)
			}
		}},
		{name: "over the budget", tokens: 4, edit: func(r *sweep.Replayer) { r.Budget = budget.Budget{Bytes: 1 << 10} },
			want: func(t *testing.T, g ran) {
				var ex *budget.Exceeded
				if !errors.As(g.err, &ex) || !strings.HasPrefix(ex.What, "EP2 × 4 tokens × top-2 on mini-gda") {
					t.Errorf("got %v, want the budget's refusal of EP2 × 4 tokens × top-2 on mini-gda", g.err)
				}
			}},
		{name: "queues too shallow", tokens: 600, want: func(t *testing.T, g ran) {
			var de *sweep.ReplayDepthError
			if !errors.As(g.err, &de) || de.Tokens != 600 || de.Preset != "mini-gda" || !errors.Is(g.err, moe.ErrQueueDepth) {
				t.Errorf("got %v, want 600 tokens refused on mini-gda's queue depth", g.err)
			}
		}},
		{name: "failing under loss", tokens: 32, edit: func(r *sweep.Replayer) { r.Faults = sweep.Faults{Specs: []string{"loss:0.9"}, Seed: 1} },
			want: func(t *testing.T, g ran) {
				if g.err != nil || len(g.failed) == 0 {
					t.Fatalf("got %v, failures %v; want a result with failures", g.err, g.failed)
				}
				for _, f := range g.failed {
					ph := map[string]*moe.Phase{"dispatch": &g.res.Dispatch, "combine": &g.res.Combine}[f.Phase]
					if ph == nil || ph.Failure != f.Err || f.Preset != "mini-gda" || f.Tokens != 32 || f.Faults != g.res.Faults {
						t.Errorf("failure %v is not the result's", f)
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g ran
			r, err := replayer(t, twoRanks(tc.tokens), func(r *sweep.Replayer) {
				r.Failed = func(f *sweep.Failure) { g.failed = append(g.failed, f) }
				if tc.edit != nil {
					tc.edit(r)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			_ = r.Run(nopSink{}, func(rt *moe.Routing, p preset.Preset) (*moe.Result, error) {
				g.rt = rt
				g.res, g.err = r.RunGroup(rt, p)
				return g.res, g.err
			}, nil)
			tc.want(t, g)
		})
	}
}

// Check refuses, before any group runs, a layer no group can run (more
// queues than the NIC holds), on the preset that refuses it.
func TestReplayerCheck(t *testing.T) {
	t.Parallel()
	r, err := replayer(t, twoRanks(4), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("a layer that runs: %v", err)
	}
	r.Knobs = map[string]string{"qps-per-peer": "100000"}
	var ce *sweep.CheckError
	if err := r.Check(); !errors.As(err, &ce) || ce.Preset.Name != "mini-gda" {
		t.Errorf("100,000 QPs a peer: got %v, want mini-gda's refusal", err)
	}
}

// Render writes the replay in the format asked for, the replay's account
// in its header, and keeps the plot's document only when asked.
func TestReplayerRender(t *testing.T) {
	t.Parallel()
	for _, plot := range []bool{false, true} {
		r, err := replayer(t, twoRanks(4), nil)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		pl, err := r.Render(&b, "csv", report.Header{Command: "replay"}, plot, nil)
		if err != nil || (pl != nil) != plot {
			t.Fatalf("plot %v: got %v, %v", plot, pl, err)
		}
		if !strings.Contains(b.String(), "mini-gda") || !strings.Contains(b.String(), "trace t.bin: logical ids, 8 experts") {
			t.Errorf("plot %v: the table lacks the preset or the trace's account:\n%s", plot, b.String())
		}
	}
}

// Workload is the named workload with the element types named, a refusal
// naming the field at fault.
func TestWorkload(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dispatch, combine string
		hidden                  int
		d, c                    moe.DType
		field                   string // "" for no error
	}{
		{name: "deepseek-v3", hidden: 7168, d: moe.FP8, c: moe.BF16},
		{name: "deepseek-v3", dispatch: "bf16", combine: "fp32", hidden: 7168, d: moe.BF16, c: moe.FP32},
		{name: "deepseek-v3", dispatch: "nvfp4", hidden: 7168, d: moe.NVFP4, c: moe.BF16},
		{name: "gpt-2", field: "workload"},
		{name: "deepseek-v3", dispatch: "int3", field: "dispatch-dtype"},
		{name: "deepseek-v3", combine: "fp8", field: "combine-dtype"},
	} {
		w, err := sweep.Workload(tc.name, tc.dispatch, tc.combine)
		if tc.field != "" {
			if fs := field.Fields(err); len(fs) == 0 || fs[0].Field != tc.field || !errors.Is(err, sweep.ErrInput) {
				t.Errorf("%s %s/%s: got %v, want a refusal of %s", tc.name, tc.dispatch, tc.combine, err, tc.field)
			}
			continue
		}
		if err != nil || w.Name != tc.name || w.Shape.Hidden != tc.hidden || w.Shape.Dispatch != tc.d || w.Shape.Combine != tc.c {
			t.Errorf("%s %s/%s: got %s, hidden %d, %s/%s, %v", tc.name, tc.dispatch, tc.combine, w.Name, w.Shape.Hidden, w.Shape.Dispatch, w.Shape.Combine, err)
		}
	}
}
