package moe_test

import (
	"testing"

	"moebench/moe"
)

// Values given replace the shape's, zeros included; other experts drop
// the replicas, the same count keeps them.
func TestShapeOver(t *testing.T) {
	t.Parallel()
	base := moe.Shape{Ranks: 16, GPUsPerNode: 8, Experts: 256, PhysicalExperts: 288, TopK: 8, Hidden: 7168, Tokens: 128}
	for _, tc := range []struct {
		name  string
		given map[string]int
		want  moe.Shape
	}{
		{"none", nil, base},
		{"counts", map[string]int{"tokens": 4, "ranks": 32, "gpus-per-node": 4, "topk": 6, "hidden": 2048},
			moe.Shape{Ranks: 32, GPUsPerNode: 4, Experts: 256, PhysicalExperts: 288, TopK: 6, Hidden: 2048, Tokens: 4}},
		{"zero given", map[string]int{"tokens": 0}, moe.Shape{Ranks: 16, GPUsPerNode: 8, Experts: 256, PhysicalExperts: 288, TopK: 8, Hidden: 7168}},
		{"other experts", map[string]int{"experts": 64}, moe.Shape{Ranks: 16, GPUsPerNode: 8, Experts: 64, TopK: 8, Hidden: 7168, Tokens: 128}},
		{"same experts", map[string]int{"experts": 256}, base},
		{"unknown name", map[string]int{"layers": 3}, base},
	} {
		if got := base.Over(tc.given); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
