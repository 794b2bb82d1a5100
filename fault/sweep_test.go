package fault_test

import (
	"strconv"
	"testing"

	"moebench/fault"
	"moebench/internal/field"
)

func TestSweepVariants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		sw    fault.Sweep
		ranks int
		want  [][]string // per loss rate, each seed's plan (String), "" when healthy
		loss  []string   // per loss rate
		field bool
	}{
		{"one plan", fault.Sweep{Specs: []string{"slow:1:2"}, Seeds: []uint64{7}}, 8,
			[][]string{{"slow:1:2 (seed 7)"}}, []string{""}, false},
		{"loss swept over seeds", fault.Sweep{Loss: []float64{0, 1e-4}, Seeds: []uint64{1, 2}}, 8,
			[][]string{{"", ""}, {"loss:0.0001@host,loss:0.0001@spine (seed 1)", "loss:0.0001@host,loss:0.0001@spine (seed 2)"}}, []string{"0", "0.0001"}, false},
		{"an empty sweep of loss", fault.Sweep{Loss: []float64{}, Seeds: []uint64{1}}, 8, nil, nil, false},
		{"a rank past the layer", fault.Sweep{Specs: []string{"slow:9:2"}, Seeds: []uint64{1}}, 8, nil, nil, true},
		{"bad syntax", fault.Sweep{Specs: []string{"drop:1"}, Seeds: []uint64{1}}, 8, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vs, err := tc.sw.Variants(tc.ranks)
			if tc.field {
				if fs := field.Fields(err); len(fs) == 0 || fs[0].Field != "fault" {
					t.Fatalf("error %v, want one about fault", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != len(tc.want) {
				t.Fatalf("%d loss rates, want %d", len(vs), len(tc.want))
			}
			for i, byLoss := range vs {
				for j, v := range byLoss {
					got := ""
					if v.Plan != nil {
						got = v.Plan.String() + " (seed " + strconv.FormatUint(v.Seed, 10) + ")"
					}
					if got != tc.want[i][j] || v.Loss != tc.loss[i] || v.Seed != tc.sw.Seeds[j] {
						t.Errorf("rate %d seed %d: %q loss %q, want %q loss %q", i, j, got, v.Loss, tc.want[i][j], tc.loss[i])
					}
				}
			}
		})
	}
}
