package sweep_test

import (
	"testing"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/results"
	"moebench/sweep"
	"moebench/transport"
	"moebench/transport/preset"
)

// Doc gives one run per item with what the command asked for beside
// the result, and with fault seeds the tails over them instead.
func TestDoc(t *testing.T) {
	t.Parallel()
	res := &moe.Result{Transport: "mini-gda", Mode: moe.LL, Correct: true,
		Shape: moe.Shape{Ranks: 16, GPUsPerNode: 8, Experts: 64, TopK: 8, Hidden: 1024, Tokens: 8}}
	item := func(seeds int) sweep.Item {
		return sweep.Item{Result: res, Preset: preset.Preset{Name: "deepep-v1", Mechanism: "mini-gda"}, Layers: 3,
			Point: sweep.Point{Knobs: transport.Settings{"qps-per-peer": "4"}, BackgroundName: "bulk:64",
				Sets: []string{"nic.gbps=400"}, Fault: sweep.Fault{Seeds: seeds, Seed: 1}}}
	}
	h := report.Header{Command: "run"}
	tests := []struct {
		name  string
		items []sweep.Item
		runs  int  // the layer document's runs
		tails bool // the tails document instead
	}{
		{"none", nil, 0, false},
		{"one run", []sweep.Item{item(0)}, 1, false},
		{"two runs", []sweep.Item{item(0), item(0)}, 2, false},
		{"seeds", []sweep.Item{item(2), item(2)}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := sweep.Doc(h, "deepseek-v3", tt.items)
			if d.Head().Command != "run" {
				t.Errorf("header %+v, want run's", d.Head())
			}
			if _, ok := d.(*results.Tails); ok != tt.tails {
				t.Fatalf("document %T, want tails %v", d, tt.tails)
			}
			if tt.tails {
				return
			}
			l := d.(*results.Layer)
			if l.Results == nil {
				t.Error("runs nil, want empty: the JSON writes none as []")
			}
			if len(l.Results) != tt.runs {
				t.Fatalf("%d runs, want %d", len(l.Results), tt.runs)
			}
			for _, r := range l.Results {
				if r.Preset != "deepep-v1" || r.Transport != "mini-gda" || r.Workload != "deepseek-v3" || r.Engine != "model" ||
					r.QPsPerPeer != 4 || r.Background != "bulk:64" || r.Ranks != 16 {
					t.Errorf("run %+v, want deepep-v1 on mini-gda, deepseek-v3, 4 QPs a peer, bulk:64, 16 ranks", r)
				}
			}
		})
	}
}
