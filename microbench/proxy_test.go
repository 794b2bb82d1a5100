package microbench

import (
	"math"
	"strings"
	"sync"
	"testing"

	"moebench/profile"
)

var proxyExperiments = []string{"proxy-single-op", "proxy-capacity", "proxy-loaded", "goodput"}

// The proxy rows on P-IB are shared by the tests below: proxy-loaded is
// the dearest experiment in the registry.
var proxyBase = sync.OnceValues(func() ([]Row, error) {
	p := profile.MustLoad("p-ib")
	exps, err := Select(proxyExperiments)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for _, e := range exps {
		rs, err := e.Run(p)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
	}
	return rows, nil
})

func proxyRows(t *testing.T) []Row {
	t.Helper()
	rows, err := proxyBase()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestProxyRowsMatchThePaper is the acceptance test of the mini-proxy
// model: Tables 3, 9, 10 and 11 and Fig. 8 within a 15% median and 50%
// worst error, every loaded round trip within 2x, and the shared ring
// slower than the reserved one.
func TestProxyRowsMatchThePaper(t *testing.T) {
	t.Parallel()
	rows := withPaper(proxyRows(t))
	count := map[string]int{}
	for _, r := range rows {
		count[r.Experiment]++
		e := r.RelErr()
		if r.Experiment == "proxy-loaded" && r.Unit == "µs" {
			if r.Model > 2*r.Paper || r.Model < r.Paper/2 {
				t.Errorf("%s / %s: loaded RTT %.3g µs vs paper %.3g: beyond 2x", r.Case, r.Metric, r.Model, r.Paper)
			}
			continue
		}
		if e > 0.5 {
			t.Errorf("%s / %s / %s: model %.3g vs paper %.3g (%.0f%% off)", r.Experiment, r.Case, r.Metric, r.Model, r.Paper, 100*e)
		}
	}
	for exp, want := range map[string]int{"proxy-single-op": 10, "proxy-capacity": 5, "proxy-loaded": 5, "goodput": 2} {
		if count[exp] != want {
			t.Errorf("%s: %d rows with a paper value, want %d", exp, count[exp], want)
		}
	}
	s := Summarize(rows)
	if s.MedianErr > 0.15 {
		t.Errorf("median relative error %.1f%% > 15%%", 100*s.MedianErr)
	}
	shared := find(t, rows, "proxy-loaded", "T4/R32/B16, shared ring, 64", "probe RTT p50")
	reserved := find(t, rows, "proxy-loaded", "T4/R32/B16, reserved ring, 64", "probe RTT p50")
	if shared <= 5*reserved {
		t.Errorf("shared ring %.0f µs vs reserved %.0f µs: the shared ring should collapse", shared, reserved)
	}
	t.Logf("%d rows: median %.2f%%, max %.2f%% (%s)", s.Rows, 100*s.MedianErr, 100*s.MaxErr, s.Worst)
}

// TestProxyCollapseComesFromLoad checks the shape of Fig. 6: with little
// background both rings answer near the idle round trip; the shared ring
// collapses once the background saturates the proxy, the reserved one
// grows by the send-queue backlog only.
func TestProxyCollapseComesFromLoad(t *testing.T) {
	t.Parallel()
	rows := proxyRows(t)
	idle := find(t, rows, "proxy-loaded", "T4/R32/B16, shared ring, 0 ", "probe RTT p50")
	for _, ring := range []string{"shared", "reserved"} {
		one := find(t, rows, "proxy-loaded", "T4/R32/B16, "+ring+" ring, 1 ", "probe RTT p50")
		if one > 1.2*idle {
			t.Errorf("%s ring with one background CTA: %.1f µs vs idle %.1f", ring, one, idle)
		}
	}
	// From 16 CTAs on the background saturates the proxy (it carries
	// what the workers can post), and the shared ring's probe waits
	// behind it.
	s16 := find(t, rows, "proxy-loaded", "T4/R32/B16, shared ring, 16 ", "probe RTT p50")
	s64 := find(t, rows, "proxy-loaded", "T4/R32/B16, shared ring, 64 ", "probe RTT p50")
	c16 := find(t, rows, "proxy-loaded", "T4/R32/B16, shared ring, 16 ", "background carried")
	c64 := find(t, rows, "proxy-loaded", "T4/R32/B16, shared ring, 64 ", "background carried")
	if !(s64 > 10*s16 && s16 > 5*idle && c16 > 0.95*c64) {
		t.Errorf("shared ring RTT should collapse once the proxy saturates: idle %.1f, 16 CTAs %.1f µs at %.1f M msg/s, 64 CTAs %.1f µs at %.1f", idle, s16, c16, s64, c64)
	}
}

// TestProxyRowsComeFromTheMechanism moves one constant at a time and
// checks that the rows depending on that mechanism move and the others
// do not.
func TestProxyRowsComeFromTheMechanism(t *testing.T) {
	t.Parallel()
	base := profile.MustLoad("p-ib")
	fast := []string{"proxy-single-op", "proxy-capacity"}
	b := runAll(t, base, fast...)
	moved := func(name string, delta float64) []Row {
		p := base.Clone()
		if err := p.SetValue(name, base.Get(name)+delta, "test"); err != nil {
			t.Fatal(err)
		}
		return runAll(t, p, fast...)
	}
	diff := func(r []Row, cas, metric string) float64 {
		return find(t, r, "proxy-single-op", cas, metric) - find(t, b, "proxy-single-op", cas, metric)
	}
	// Rows that go through the worker's polling loop move by the change
	// give or take one pass of the idle loop (the descriptor lands at
	// another phase of it).
	loop := base.Get("proxy.ring_poll.ns")/1000 + base.Get("proxy.ring_poll.cycles")/base.Get("proxy.cpu_cold_mhz") +
		base.Get("proxy.cq_empty.ns")/1000 + base.Get("proxy.cq_empty.cycles")/base.Get("proxy.cpu_cold_mhz")
	near := func(got, want float64, what string) {
		t.Helper()
		if math.Abs(got-want) > 0.005 {
			t.Errorf("%s moved by %.4f, want %.4f", what, got, want)
		}
	}

	// A dearer system-scope release moves the baseline enqueue by exactly
	// its cost and leaves the tuned one (a single posted store) alone.
	r := moved("gpu.release_sys.ns", 500)
	near(diff(r, "mini-proxy, baseline, cold", "issue (enqueue)"), 0.5, "baseline enqueue")
	near(diff(r, "mini-proxy, tuned, cold", "issue (enqueue)"), 0, "tuned enqueue")
	near(diff(r, "mini-proxy, tuned, cold", "RTT"), 0, "tuned RTT")

	// The worker state moves host-bound rows, not the GPU's enqueue.
	for _, h := range []string{"baseline", "tuned"} {
		near(find(t, b, "proxy-single-op", "mini-proxy, "+h+", warm", "issue (enqueue)")-
			find(t, b, "proxy-single-op", "mini-proxy, "+h+", cold", "issue (enqueue)"), 0, h+" enqueue, warm vs cold")
		if w, c := find(t, b, "proxy-single-op", "mini-proxy, "+h+", warm", "RTT"), find(t, b, "proxy-single-op", "mini-proxy, "+h+", cold", "RTT"); w >= c {
			t.Errorf("%s RTT warm %.2f ≥ cold %.2f", h, w, c)
		}
	}
	for _, bt := range []string{"B=1, 1 workers", "B=16, 1 workers"} {
		c := find(t, b, "proxy-capacity", "mini-proxy, "+bt+", cold", "message rate")
		w := find(t, b, "proxy-capacity", "mini-proxy, "+bt+", warm", "message rate")
		if w < 1.5*c {
			t.Errorf("%s: warm %.1f vs cold %.1f M msg/s: a worker-bound rate should follow the core", bt, w, c)
		}
	}

	// Batching raises capacity; more workers raise it until the host
	// path's ceiling.
	for _, st := range []string{"cold", "warm"} {
		if b1, b16 := find(t, b, "proxy-capacity", "mini-proxy, B=1, 1 workers, "+st, "message rate"), find(t, b, "proxy-capacity", "mini-proxy, B=16, 1 workers, "+st, "message rate"); b16 < 3*b1 {
			t.Errorf("%s: B=16 %.1f vs B=1 %.1f M msg/s", st, b16, b1)
		}
	}
	ceiling := base.Get("proxy.host_msg_rate_mps")
	if v := find(t, b, "proxy-capacity", "mini-proxy, B=16, 8 workers, warm", "message rate"); v > ceiling*1.001 {
		t.Errorf("8 warm workers carry %.1f M msg/s above the host path's %.0f", v, ceiling)
	}

	// The GDRCopy store's flight moves the tuned put+completion only.
	r = moved("proxy.gdr_flight_ns", 300)
	if d := diff(r, "mini-proxy, tuned, cold", "put+completion"); math.Abs(d-0.3) > loop {
		t.Errorf("tuned put+completion moved by %.3f, want 0.3 ± %.3f", d, loop)
	}
	near(diff(r, "mini-proxy, baseline, cold", "put+completion"), 0, "baseline put+completion")
	near(diff(r, "mini-proxy, tuned, cold", "RTT"), 0, "tuned RTT")

	// The ibv_post_send call's cost sets the B=1 rate far more than B=16's.
	r = moved("proxy.post_chain.ns", 100)
	d1 := find(t, r, "proxy-capacity", "mini-proxy, B=1, 1 workers, cold", "message rate") / find(t, b, "proxy-capacity", "mini-proxy, B=1, 1 workers, cold", "message rate")
	d16 := find(t, r, "proxy-capacity", "mini-proxy, B=16, 1 workers, cold", "message rate") / find(t, b, "proxy-capacity", "mini-proxy, B=16, 1 workers, cold", "message rate")
	if !(d1 < 0.85 && d16 > 0.9) {
		t.Errorf("a dearer post: B=1 rate ×%.2f, B=16 ×%.2f", d1, d16)
	}
}

func TestProxyExperimentsListed(t *testing.T) {
	t.Parallel()
	exps, err := Select(proxyExperiments)
	if err != nil || len(exps) != len(proxyExperiments) {
		t.Fatalf("Select(%v) = %d experiments, %v", proxyExperiments, len(exps), err)
	}
	for _, e := range exps {
		if !strings.Contains(e.Summary, "Fig.") && !strings.Contains(e.Summary, "Table") {
			t.Errorf("%s: summary %q names no table or figure", e.Name, e.Summary)
		}
	}
}

func BenchmarkProxyLoaded(b *testing.B) {
	b.ReportAllocs()
	p := profile.MustLoad("p-ib")
	exps, _ := Select([]string{"proxy-loaded"})
	for b.Loop() {
		if _, err := exps[0].Run(p); err != nil {
			b.Fatal(err)
		}
	}
}
