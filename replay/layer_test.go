package replay_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/replay"
	"moebench/traces"
	"moebench/workloads"
)

func intp(v int) *int { return &v }

// options are a replay of the test trace on workload name, fields named
// as the command line does.
func options(t *testing.T, name string) replay.Options {
	t.Helper()
	w, err := workloads.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	return replay.Options{Name: "t.bin", Workload: w, Mode: moe.LL, MaxOpen: 8, Profile: prof,
		Spell: func(f string) string { return "--" + f }}
}

// New takes the ranks and nodes from the options, else the trace, else
// the workload, and names where each came from when they do not fit.
func TestNewResolvesTheLayer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		h               traces.Header // Experts 8, TopK 2 unless set
		edit            func(o *replay.Options)
		ranks, perNode  int
		nvlink          bool
		limitNote, fail string
		field           string
	}{
		{name: "the trace's ranks", h: traces.Header{EPSize: 4, GPUsPerNode: 2}, ranks: 4, perNode: 2,
			limitNote: "group limit: not checked: the trace has 8 experts, workload deepseek-v3's limit is for 256 (set --topk-groups)"},
		{name: "the options' ranks over the trace's", h: traces.Header{EPSize: 4}, edit: func(o *replay.Options) { o.Ranks, o.GPUsPerNode = 8, 4 }, ranks: 8, perNode: 4},
		{name: "fewer ranks than a node", h: traces.Header{EPSize: 2}, ranks: 2, perNode: 2},
		{name: "normal mode takes NVLink", h: traces.Header{EPSize: 2}, edit: func(o *replay.Options) { o.Mode = moe.Normal }, ranks: 2, perNode: 2, nvlink: true},
		{name: "NVLink given", h: traces.Header{EPSize: 2}, edit: func(o *replay.Options) { o.NVLink = new(bool); *o.NVLink = true }, ranks: 2, perNode: 2, nvlink: true},
		{name: "a limit given", h: traces.Header{EPSize: 4}, edit: func(o *replay.Options) { o.Limit = &moe.GroupLimit{TopK: 1, Groups: 2} }, ranks: 4, perNode: 4,
			limitNote: "group limit: top-1 of 2 expert groups, --topk-groups; tokens beyond it are reported, not changed"},
		{name: "a limit off", h: traces.Header{EPSize: 4}, edit: func(o *replay.Options) { o.Limit = &moe.GroupLimit{} }, ranks: 4, perNode: 4,
			limitNote: "group limit: not checked (--topk-groups 0)"},
		{name: "top-k not the trace's", edit: func(o *replay.Options) { o.TopK = intp(4) }, fail: "topk 4: t.bin records top-2", field: "topk"},
		{name: "experts not the trace's", edit: func(o *replay.Options) { o.Experts = intp(0) }, fail: "experts 0: t.bin records 8 logical experts", field: "experts"},
		{name: "not placeable", edit: func(o *replay.Options) { o.Ranks = 3 }, fail: "t.bin: its 8 experts cannot be placed evenly on 3 ranks (--ranks)"},
		{name: "not whole nodes", h: traces.Header{EPSize: 4}, edit: func(o *replay.Options) { o.GPUsPerNode = 3 },
			fail: "4 ranks (the trace's ep_size) do not fill whole nodes of 3 GPUs (--gpus-per-node)"},
		{name: "the workload's ranks", fail: "t.bin: its 8 experts cannot be placed evenly on 16 ranks (the workload's; set --ranks)"},
		{name: "a limit that does not split", h: traces.Header{EPSize: 4}, edit: func(o *replay.Options) { o.Limit = &moe.GroupLimit{TopK: 1, Groups: 3} },
			fail: "--expert-groups: 8 logical experts do not split into 3 equal groups (the trace's 8 experts, 1 nodes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := options(t, "deepseek-v3")
			if tc.edit != nil {
				tc.edit(&o)
			}
			h := tc.h
			h.Version, h.IDSpace, h.Experts, h.TopK, h.Layers = 1, traces.Logical, 8, 2, 1
			r, err := replay.New(o, &traces.Memory{H: h})
			if tc.fail != "" {
				if err == nil || err.Error() != tc.fail || !errors.Is(err, replay.ErrInput) {
					t.Fatalf("got %v, want the input error %q", err, tc.fail)
				}
				if fs := field.Fields(err); tc.field != "" && (len(fs) == 0 || fs[0].Field != tc.field) {
					t.Errorf("fields %v, want %s", fs, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := r.Shape()
			if s.Ranks != tc.ranks || s.GPUsPerNode != tc.perNode || s.Experts != 8 || s.TopK != 2 || s.Hidden != 7168 || r.NVLink() != tc.nvlink {
				t.Errorf("shape %+v, NVLink %v; want EP%d on nodes of %d, NVLink %v", s, r.NVLink(), tc.ranks, tc.perNode, tc.nvlink)
			}
			if tc.limitNote != "" && !slices.Contains(r.Notes(), tc.limitNote) {
				t.Errorf("notes %q lack %q", r.Notes(), tc.limitNote)
			}
		})
	}
}

func TestCheckNamesTheField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		edit func(o *replay.Options)
		want string
	}{
		{func(o *replay.Options) { o.NumSMs = -1 }, "num-sms -1: must be 0 (DeepEP's choice) or more"},
		{func(o *replay.Options) { o.Hidden = intp(-2) }, "hidden -2: must be 0 (the workload's) or more"},
		{func(o *replay.Options) { o.MaxOpen = 0 }, "max-open 0: must be at least 1"},
	} {
		o := replay.Options{MaxOpen: 1}
		tc.edit(&o)
		err := o.Check()
		if err == nil || err.Error() != tc.want || !errors.Is(err, replay.ErrInput) || len(field.Fields(err)) != 1 {
			t.Errorf("got %v, want the field error %q", err, tc.want)
		}
	}
	if err := (&replay.Options{MaxOpen: 1}).Check(); err != nil {
		t.Errorf("zero options: %v", err)
	}
}

// The header's account names the trace, the layer and the limits asked
// for, the caller's notes between.
func TestNotes(t *testing.T) {
	t.Parallel()
	o := options(t, "deepseek-v3")
	o.Steps, o.MaxLayers, o.Notes = 2, 5, []string{"faults: none"}
	h := traces.Header{Version: 1, IDSpace: traces.Logical, Experts: 256, TopK: 8, Layers: 3, Steps: 4, EPSize: 16, GPUsPerNode: 8, Provenance: "test"}
	r, err := replay.New(o, &traces.Memory{H: h})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"trace t.bin: logical ids, 256 experts, top-8, 3 layers, steps 4, ranks EP16",
		"provenance: test",
		"layer: workload deepseek-v3 (hidden 7168, fp8 dispatch, bf16 combine), EP16 = 2 nodes × 8 GPUs, ll mode, NVLink off; tokens per rank: the busiest rank's in each (step, layer)",
		"source ranks: as recorded; records without a rank are split evenly over the 16 ranks",
		"background none",
		"group limit: top-4 of 8 expert groups, the workload's (deepseek-v3); tokens beyond it are reported, not changed",
		"faults: none",
		"limited to steps below 2 and at most 5 (step, layer) groups",
	}
	if got := r.Notes(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Expected() != 5 {
		t.Errorf("expected %d groups, want 5 (2 steps × 3 layers, at most 5)", r.Expected())
	}
}
