package sizing_test

import (
	"testing"

	"moebench/moe"
	"moebench/sizing"
	"moebench/transport"
	"moebench/transport/preset"
)

// The largest candidate takes each given knob at its largest value, once
// per mechanism, in the presets' order.
func TestLargestCosts(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 64, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	get := func(n string) preset.Preset {
		p, err := preset.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	at := func(mech string, set transport.Settings) moe.Cost {
		return moe.EstimateCost(s, moe.LL, transport.CostOf(mech, s.Ranks, s.LocalExperts(), set))
	}
	for _, tc := range []struct {
		name    string
		presets []string
		given   map[string][]int
		want    []moe.Cost
	}{
		{"defaults", []string{"mini-gda"}, nil, []moe.Cost{at("mini-gda", transport.Settings{})}},
		{"the largest of a list", []string{"mini-gda"}, map[string][]int{"qps-per-peer": {2, 8, 4}},
			[]moe.Cost{at("mini-gda", transport.Settings{"qps-per-peer": "8"})}},
		{"one per mechanism", []string{"mini-gda", "deepep-v1", "mini-proxy"}, map[string][]int{"qps-per-peer": {1}, "workers": {}},
			[]moe.Cost{at("mini-gda", transport.Settings{"qps-per-peer": "1"}), at("mini-proxy", transport.Settings{"qps-per-peer": "1"})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ps []preset.Preset
			for _, n := range tc.presets {
				ps = append(ps, get(n))
			}
			got := sizing.LargestCosts(s, moe.LL, ps, tc.given)
			if len(got) != len(tc.want) {
				t.Fatalf("%d costs, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("cost %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
	// More queues a peer cost more: the largest list value is taken.
	if few, many := at("mini-gda", transport.Settings{"qps-per-peer": "1"}), at("mini-gda", transport.Settings{"qps-per-peer": "8"}); many.Bytes <= few.Bytes {
		t.Errorf("8 QPs a peer cost %d bytes, 1 costs %d", many.Bytes, few.Bytes)
	}
}
