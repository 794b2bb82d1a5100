package workloads_test

import (
	"testing"

	"moebench/moe"
	"moebench/workloads"
)

// The header's workload line: the shape as it runs, and the dtypes only
// where they are not the workload's.
func TestLine(t *testing.T) {
	t.Parallel()
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	s := w.Shape
	s.Ranks, s.GPUsPerNode, s.Tokens = 16, 8, 8
	bf := s
	bf.Dispatch = moe.BF16
	for _, tc := range []struct {
		name   string
		s      moe.Shape
		mode   moe.Mode
		nvlink bool
		want   string
	}{
		{"own dtypes", s, moe.LL, false, "workload deepseek-v3: 256 experts, top-8, hidden 7168, 8 tokens/rank, EP16 = 2 nodes × 8 GPUs, ll mode, NVLink off"},
		{"bf16 dispatch", bf, moe.Normal, true, "workload deepseek-v3: 256 experts, top-8, hidden 7168, 8 tokens/rank, EP16 = 2 nodes × 8 GPUs, normal mode, NVLink on, bf16 dispatch, bf16 combine"},
	} {
		if got := workloads.Line("deepseek-v3", tc.s, tc.mode, tc.nvlink); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
