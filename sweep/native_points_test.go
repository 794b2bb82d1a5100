package sweep_test

import (
	"errors"
	"testing"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/sweep"
	"moebench/workloads"
)

// OnGPUs puts each point on each count of GPUs and of ranks sharing one,
// one host, and refuses what the native engine's kernels do not run,
// naming the field.
func TestOnGPUs(t *testing.T) {
	t.Parallel()
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	point := func(mode moe.Mode, edit func(*moe.Shape)) []sweep.Point {
		s := w.Shape
		s.Ranks, s.GPUsPerNode, s.Tokens = 8, 8, 8
		if edit != nil {
			edit(&s)
		}
		return []sweep.Point{{Shape: s, Mode: mode}}
	}
	for _, tc := range []struct {
		name              string
		points            []sweep.Point
		gpus, shared      []int
		ranksGiven, chunk bool
		want              [][2]int // each point's ranks and GPUs
		field             string   // the field refused, "" for none
		is                error
	}{
		{name: "GPUs × shared", points: point(moe.LL, nil), gpus: []int{1, 2}, shared: []int{4}, want: [][2]int{{4, 1}, {8, 2}}},
		{name: "ranks given and met", points: point(moe.LL, nil), gpus: []int{2}, shared: []int{4}, ranksGiven: true, want: [][2]int{{8, 2}}},
		{name: "ranks given, unmet", points: point(moe.LL, nil), gpus: []int{2}, shared: []int{2}, ranksGiven: true, field: "ranks"},
		{name: "chunk in normal", points: point(moe.Normal, nil), gpus: []int{1}, shared: []int{8}, chunk: true, want: [][2]int{{8, 1}}},
		{name: "chunk in LL", points: point(moe.LL, nil), gpus: []int{1}, shared: []int{8}, chunk: true, field: "chunk", is: sweep.ErrNativeChunk},
		{name: "nvfp4 dispatch", points: point(moe.LL, func(s *moe.Shape) { s.Dispatch = moe.NVFP4 }), gpus: []int{1}, shared: []int{8}, field: "dispatch-dtype", is: sweep.ErrNativeDispatch},
		{name: "fp16 combine", points: point(moe.LL, func(s *moe.Shape) { s.Combine = moe.FP16 }), gpus: []int{1}, shared: []int{8}, field: "combine-dtype"},
		{name: "experts not placed", points: point(moe.LL, nil), gpus: []int{1}, shared: []int{3}, field: "experts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := sweep.OnGPUs(tc.points, tc.gpus, tc.shared, tc.ranksGiven, tc.chunk)
			if tc.field != "" {
				wantRefusal(t, err, tc.field, tc.is)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("%d points, want %d", len(got), len(tc.want))
			}
			for i, p := range got {
				if p.Shape.Ranks != tc.want[i][0] || p.GPUs != tc.want[i][1] || p.Shape.GPUsPerNode != 1 {
					t.Errorf("point %d: %d ranks on %d GPUs, %d a node; want %v, one host", i, p.Shape.Ranks, p.GPUs, p.Shape.GPUsPerNode, tc.want[i])
				}
			}
		})
	}
}

// wantRefusal fails t unless err is a refusal whose first field is name
// and, where is is not nil, which wraps is.
func wantRefusal(t *testing.T, err error, name string, is error) {
	t.Helper()
	fs := field.Fields(err)
	if len(fs) == 0 || fs[0].Field != name {
		t.Fatalf("err %v, want one of field %s", err, name)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("err %v, want %v", err, is)
	}
}
