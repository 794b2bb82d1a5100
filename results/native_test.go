package results

import (
	"testing"

	"moebench/native"
	nativelayer "moebench/native/layer"
)

// The placement column names ranks and GPUs in the singular where there is
// one.
func TestPlacementText(t *testing.T) {
	for _, tc := range []struct {
		ranks, gpus int
		want        string
	}{
		{1, 1, "1 rank on 1 GPU, 16 SMs each"},
		{8, 1, "8 virtual ranks on 1 GPU, 16 SMs each"},
		{2, 2, "2 ranks on 2 GPUs, 16 SMs each"},
		{8, 2, "2 GPUs × 4 virtual ranks, 16 SMs each"},
	} {
		m := &nativelayer.Measurement{Config: native.LayerConfig{Ranks: tc.ranks, GPUs: tc.gpus, SMsPerRank: 16}}
		if got := Placement(m); got != tc.want {
			t.Errorf("%d ranks on %d GPUs: %q, want %q", tc.ranks, tc.gpus, got, tc.want)
		}
	}
}
