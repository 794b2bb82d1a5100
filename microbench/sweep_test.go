package microbench_test

import (
	"errors"
	"testing"

	"moebench/internal/field"
	"moebench/microbench"
	"moebench/profile"
	"moebench/transport/gda"
)

func TestRateGrid(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	g := microbench.RateGrid{Styles: []gda.Publication{gda.PubThread}, Orderings: []gda.Ordering{gda.OrderingModes()[0]},
		Payloads: []int{8}, Threads: []int{32, 64}, QPs: []int{1, 4}, SMs: []int{1}, PerDoorbell: []int{1, 8}, Inline: true, Depth: 1024}
	allowed := 0
	cfgs, err := g.Configs(p, func(gda.RateConfig) error { allowed++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 8 || allowed != 8 {
		t.Fatalf("%d combinations, %d allowed; want 2 × 2 × 2 = 8 of each", len(cfgs), allowed)
	}
	refuse := errors.New("over the budget")
	if _, err := g.Configs(p, func(gda.RateConfig) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("a refused combination: %v", err)
	}
	bad := g
	bad.Threads = []int{0}
	if _, err := bad.Configs(p, func(gda.RateConfig) error { return nil }); err == nil {
		t.Error("0 threads accepted")
	}
	var skipped []string
	rows, err := microbench.RateRows(p, cfgs[:2], func(name string, _ error) { skipped = append(skipped, name) })
	if err != nil || len(rows)+len(skipped) != 2 {
		t.Fatalf("%d rows, %d skipped, %v; want 2 in all", len(rows), len(skipped), err)
	}
	for _, r := range rows {
		if r.Experiment != "rate" || !(r.Model > 0) || r.HasPaper() {
			t.Errorf("row %+v", r)
		}
	}
}

func TestSingleRows(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	ords := gda.OrderingModes()[:2]
	rows, err := microbench.SingleRows(p, ords, []int{8, 64}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*2*3 {
		t.Fatalf("%d rows, want 12: three figures for each ordering and payload", len(rows))
	}
	for i := 0; i < len(rows); i += 3 {
		issue, putC, rtt := rows[i], rows[i+1], rows[i+2]
		if issue.Metric != "issue" || putC.Metric != "put+completion" || rtt.Metric != "RTT" {
			t.Fatalf("metrics %s, %s, %s", issue.Metric, putC.Metric, rtt.Metric)
		}
		// A put's completion follows its issue.
		if !(issue.Model > 0 && putC.Model > issue.Model && rtt.Model > 0) {
			t.Errorf("%s: issue %v, put+completion %v, RTT %v µs", issue.Case, issue.Model, putC.Model, rtt.Model)
		}
	}
}

// What a sweep cannot run is refused as a field.Error naming its field;
// a grid whose every combination is skipped is ErrNoneRuns.
func TestSweepsNameTheField(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	g := microbench.RateGrid{Styles: []gda.Publication{gda.PubThread}, Orderings: []gda.Ordering{gda.OrderGPUFence},
		Payloads: []int{8}, Threads: []int{32}, QPs: []int{1}, SMs: []int{1}, PerDoorbell: []int{1}, Inline: true, Depth: 1024}
	allow := func(gda.RateConfig) error { return nil }
	skip := func(string, error) {}
	with := func(edit func(*microbench.RateGrid)) func() error {
		return func() error {
			h := g
			edit(&h)
			_, err := microbench.RateSweep(p, h, allow, skip)
			return err
		}
	}
	for _, tc := range []struct {
		name, field string
		run         func() error
	}{
		{"ordering", "ordering", func() error { _, err := microbench.ParseOrderings([]string{"gpu-fence", "nope"}); return err }},
		{"style", "style", func() error { _, err := microbench.ParseStyles([]string{"nope"}); return err }},
		{"per doorbell", "per-doorbell", with(func(h *microbench.RateGrid) { h.PerDoorbell = []int{0} })},
		{"sms", "sms", with(func(h *microbench.RateGrid) { h.SMs = []int{1000} })},
		{"payload", "payload", with(func(h *microbench.RateGrid) { h.Payloads = []int{0} })},
		{"single payload", "payload", func() error {
			_, err := microbench.SingleRows(p, []gda.Ordering{gda.OrderGPUFence}, []int{1 << 20}, true)
			return err
		}},
	} {
		fs := field.Fields(tc.run())
		if len(fs) != 1 || fs[0].Field != tc.field {
			t.Errorf("%s: fields %v, want one of %s", tc.name, fs, tc.field)
		}
	}
	if err := with(func(h *microbench.RateGrid) { h.Threads = []int{33}; h.QPs = []int{2} })(); !errors.Is(err, microbench.ErrNoneRuns) {
		t.Errorf("33 threads over 2 QPs: %v, want ErrNoneRuns", err)
	}
	if all, err := microbench.ParseOrderings([]string{"all"}); err != nil || len(all) != len(microbench.OrderingNames()) {
		t.Errorf("all: %v, %v", all, err)
	}
}
