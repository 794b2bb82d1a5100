package sweep_test

import (
	"errors"
	"testing"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/sweep"
)

func TestRequestResolve(t *testing.T) {
	t.Parallel()
	ok := sweep.Request{Workload: "deepseek-v3", Modes: []string{"ll", "normal"}, Backgrounds: []string{"none"}}
	over := ok
	over.Given, over.Dispatch = map[string]int{"topk": 4, "hidden": 4096}, "bf16"
	g, err := over.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	// DeepSeek-V3's own: top-8, hidden 7168, FP8 dispatch, BF16 combine.
	if s := g.Shape; s.TopK != 4 || s.Hidden != 4096 || s.Dispatch != moe.BF16 || s.Combine != moe.BF16 || s.Experts != 256 {
		t.Errorf("shape %+v, want top-4, hidden 4096, bf16 both ways, 256 experts", s)
	}
	if len(g.Modes) != 2 || g.Modes[1] != moe.Normal || len(g.Backgrounds) != 1 || g.Backgrounds[0].Name != "none" {
		t.Errorf("modes %v, backgrounds %v", g.Modes, g.Backgrounds)
	}
	if g, _ := ok.Resolve(); g.Shape.TopK != 8 || g.Shape.Dispatch != moe.FP8 {
		t.Errorf("nothing given over: top-%d, %s dispatch; want the workload's top-8, fp8", g.Shape.TopK, g.Shape.Dispatch)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*sweep.Request)
		field string
	}{
		{"an unknown workload", func(r *sweep.Request) { r.Workload = "gpt-9" }, "workload"},
		{"a dispatch-only combine dtype", func(r *sweep.Request) { r.Combine = "fp8" }, "combine-dtype"},
		{"an unknown mode", func(r *sweep.Request) { r.Modes = []string{"ll", "fast"} }, "mode"},
		{"a bad background", func(r *sweep.Request) { r.Backgrounds = []string{"bulk:x"} }, "background"},
		// The workload is read first: its refusal wins.
		{"two at once", func(r *sweep.Request) { r.Workload, r.Modes = "gpt-9", []string{"fast"} }, "workload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := ok
			tc.edit(&r)
			_, err := r.Resolve()
			fs := field.Fields(err)
			if !errors.Is(err, sweep.ErrInput) || len(fs) == 0 || fs[0].Field != tc.field {
				t.Errorf("%v, want the caller's input naming %s", err, tc.field)
			}
		})
	}
}
