package microbench

import (
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/montanaflynn/stats"

	"moebench/profile"
)

var foundation = []string{"single-op", "ordering", "inline", "rate", "completion-scope"}

func runAll(t *testing.T, p *profile.Profile, names ...string) []Row {
	t.Helper()
	exps, err := Select(names)
	if err != nil {
		t.Fatal(err)
	}
	var rows []Row
	for _, e := range exps {
		rs, err := e.Run(p)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		rows = append(rows, rs...)
	}
	return rows
}

// pibRows runs every experiment once on P-IB for the tests that read the
// validate rows.
var pibRows = sync.OnceValues(func() ([]Row, error) {
	var rows []Row
	p := profile.MustLoad("p-ib")
	for _, e := range Experiments() {
		rs, err := e.Run(p)
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
	}
	return rows, nil
})

// pib returns the cached P-IB rows of the named experiments.
func pib(t *testing.T, names ...string) []Row {
	t.Helper()
	all, err := pibRows()
	if err != nil {
		t.Fatal(err)
	}
	var out []Row
	for _, r := range all {
		if slices.Contains(names, r.Experiment) {
			out = append(out, r)
		}
	}
	return out
}

func withPaper(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.HasPaper() {
			out = append(out, r)
		}
	}
	return out
}

// TestFoundationRowsMatchThePaper is the acceptance test of the mechanism
// model: the P-IB mini-gda rows of Tables 3-5, the inline figures of Fig. 3
// and the quiet doubling of Fig. 4 within a 10% median and 35% worst error.
func TestFoundationRowsMatchThePaper(t *testing.T) {
	t.Parallel()
	rows := withPaper(runAll(t, profile.MustLoad("p-ib"), foundation...))
	count := map[string]int{}
	for _, r := range rows {
		count[r.Source]++
		if e := r.RelErr(); e > 0.35 {
			t.Errorf("%s / %s / %s: model %.3g vs paper %.3g (%.0f%% off)", r.Experiment, r.Case, r.Metric, r.Model, r.Paper, 100*e)
		}
	}
	// Coverage: every P-IB mini-gda row of Tables 3 and 5 and Table 5's two
	// NVSHMEM rows, every P-IB row of Table 4, the inline slope and
	// savings, the quiet doubling.
	for src, want := range map[string]int{"Table 3": 7, "Table 4": 14, "Table 5": 14, "Fig. 4": 2} {
		if count[src] != want {
			t.Errorf("%s: %d rows, want %d", src, count[src], want)
		}
	}
	var inlineRows int
	for _, r := range rows {
		if r.Experiment == "inline" {
			inlineRows++
		}
	}
	if inlineRows != 3 {
		t.Errorf("inline: %d rows with paper values, want slope, 8 B saving and 92 B ratio", inlineRows)
	}
	s := Summarize(rows)
	if s.MedianErr > 0.10 {
		t.Errorf("median relative error %.1f%% > 10%%", 100*s.MedianErr)
	}
	t.Logf("%d rows: median %.2f%%, max %.2f%% (%s)", s.Rows, 100*s.MedianErr, 100*s.MaxErr, s.Worst)
}

func find(t *testing.T, rows []Row, exp, cas, metric string) float64 {
	t.Helper()
	for _, r := range rows {
		if r.Experiment == exp && strings.HasPrefix(r.Case, cas) && r.Metric == metric {
			return r.Model
		}
	}
	t.Fatalf("no row %s / %s / %s", exp, cas, metric)
	return 0
}

// TestRowsComeFromTheMechanism moves one constant at a time and checks that
// exactly the rows that depend on that mechanism move, by the amount the
// mechanism implies: the rows are not looked up.
func TestRowsComeFromTheMechanism(t *testing.T) {
	t.Parallel()
	base := profile.MustLoad("p-ib")
	b := runAll(t, base, foundation...)
	moved := func(name string, delta float64) []Row {
		p := base.Clone()
		if err := p.SetValue(name, base.Get(name)+delta, "test"); err != nil {
			t.Fatal(err)
		}
		return runAll(t, p, foundation...)
	}
	near := func(got, want float64, what string) {
		t.Helper()
		if math.Abs(got-want) > 0.005 {
			t.Errorf("%s moved by %.4f, want %.4f", what, got, want)
		}
	}

	// A GPU-scope fence 100 ns (fixed part) dearer: the one-fence modes
	// issue 0.1 µs later, fenced-dbrec (two fences) 0.2 µs, the
	// unordered and system-scope modes not at all.
	r := moved("gpu.fence_gpu.ns", 100)
	for mode, k := range map[string]float64{"gpu-fence": 1, "release-gpu": 1, "fenced-dbrec": 2, "none": 0, "threadfence": 0, "fence-sys": 0} {
		d := find(t, r, "ordering", mode, "issue") - find(t, b, "ordering", mode, "issue")
		near(d, 0.1*k, "issue of "+mode)
		d = find(t, r, "ordering", mode, "put+completion") - find(t, b, "ordering", mode, "put+completion")
		near(d, 0.1*k, "put+completion of "+mode)
	}

	// A slower NIC payload read moves pointer completion only.
	r = moved("pcie.dma_read_ns", 200)
	near(find(t, r, "single-op", "mini-gda, non-inline", "put+completion")-find(t, b, "single-op", "mini-gda, non-inline", "put+completion"), 0.4, "pointer put+c (WQE fetch and payload read)")
	near(find(t, r, "single-op", "mini-gda, inline", "issue")-find(t, b, "single-op", "mini-gda, inline", "issue"), 0, "inline issue")
	near(find(t, r, "inline", "8 B inline vs pointer", "put+completion saving")-find(t, b, "inline", "8 B inline vs pointer", "put+completion saving"), 0.2, "inline saving")

	// The NIC ceiling binds only the 64-SM row.
	r = moved("nic.msg_rate_mps", -60)
	if got := find(t, r, "rate", "64 threads, 64 QPs, 64 SMs", "message rate"); math.Abs(got-200) > 2 {
		t.Errorf("64-SM rate with a 200 M msg/s ceiling: %.1f", got)
	}
	if d := find(t, r, "rate", "1 thread, 1 QP, 1 SM", "message rate") - find(t, b, "rate", "1 thread, 1 QP, 1 SM", "message rate"); d != 0 {
		t.Errorf("one-thread rate moved by %.3f with the NIC ceiling", d)
	}

	// Per-QP doorbell handling binds threads that share a QP at one WQE
	// per doorbell, not a single thread.
	r = moved("nic.doorbell_ns", 200)
	if got, was := find(t, r, "rate", "32 threads share 1 QP", "message rate"), find(t, b, "rate", "32 threads share 1 QP", "message rate"); got > 0.8*was {
		t.Errorf("shared-QP rate %.2f → %.2f: doorbell handling should bind it", was, got)
	}

	// The quiet's per-QP visit sets the slope of the PE-wide quiet only.
	r = moved("gpu.quiet_qp.ns", 50)
	if find(t, r, "completion-scope", "PE-wide quiet, 16 vs 1", "put+completion ratio") <= find(t, b, "completion-scope", "PE-wide quiet, 16 vs 1", "put+completion ratio") {
		t.Error("a dearer QP visit did not steepen the PE-wide quiet")
	}
	near(find(t, r, "completion-scope", "per-QP completion, 16 vs 1", "put+completion ratio"), 1, "per-QP completion ratio")
}

func TestClockScalesIssue(t *testing.T) {
	t.Parallel()
	rows := runAll(t, profile.MustLoad("p-ib"), "clock")
	slow := find(t, rows, "clock", "502 MHz", "issue")
	fast := find(t, rows, "clock", "1980 MHz", "issue")
	if slow < 3*fast {
		t.Errorf("issue at 502 MHz %.2f µs vs 1,980 MHz %.2f µs: should scale with 1/f", slow, fast)
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	got, err := Select([]string{"rate", "single-op", "rate"})
	if err != nil || len(got) != 2 || got[0].Name != "single-op" {
		t.Fatalf("Select kept %v, %v", got, err)
	}
	if _, err := Select([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "single-op") {
		t.Fatalf("unknown experiment error should list known ones: %v", err)
	}
}

func BenchmarkValidateFoundation(b *testing.B) {
	b.ReportAllocs()
	p := profile.MustLoad("p-ib")
	exps, _ := Select(foundation)
	for b.Loop() {
		for _, e := range exps {
			if _, err := e.Run(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// knownGaps are rows the model does not reproduce, each explained in
// docs/model.md ("Known gaps"). They are printed with their error; the
// test fails if one starts to match, so that the page is updated.
var knownGaps = []string{
	"RC send+recv, 256 writes per visit, 2976 connections", // misses charged per visit, not per packet
	"16 DCIs × 186 peers",                                  // DCI contexts stay cached
	"GDAKI, 64 background CTAs",                            // no context-sharing wait or PCIe load in the loaded RTT
	"NVSHMEM IBGDA, 256 threads, 1 QP",                     // one QP is NIC-bound in the model at 30.9
}

func isGap(r Row) bool {
	for _, g := range knownGaps {
		if strings.HasPrefix(r.Case, g) {
			return true
		}
	}
	return false
}

// TestConnectionAndDCRows checks the NIC connection model and DC against
// §4.3.3: the listed rows within 50% and at a 15% median, all-to-all
// losing most of its rate near 3,000 connections while send-only keeps
// its rate, and DC re-targeting on every WQE far slower than bursts.
func TestConnectionAndDCRows(t *testing.T) {
	t.Parallel()
	rows := pib(t, "connections", "dc")
	gaps := 0
	for _, r := range withPaper(rows) {
		e := r.RelErr()
		switch {
		case isGap(r):
			gaps++
			if e < 0.2 {
				t.Errorf("%s / %s now matches (%.0f%% off): drop it from the known gaps and docs/model.md", r.Experiment, r.Case, 100*e)
			}
		case e > 0.5:
			t.Errorf("%s / %s: model %.3g vs paper %.3g", r.Experiment, r.Case, r.Model, r.Paper)
		}
	}
	if gaps != 2 {
		t.Errorf("%d known-gap rows printed, want the RC and DC 2,976 rows", gaps)
	}
	if s := Summarize(withPaper(rows)); s.MedianErr > 0.15 {
		t.Errorf("median error %.1f%%", 100*s.MedianErr)
	}
	a2a := find(t, rows, "connections", "send+recv (all-to-all), 2976", "rate / two-peer rate")
	so := find(t, rows, "connections", "send-only, 8192", "rate / small-set rate")
	if a2a > 0.6 || so < 0.95 {
		t.Errorf("all-to-all keeps %.2f at 2,976 connections and send-only %.2f at 8,192: want most of the former lost, the latter kept", a2a, so)
	}
	if small := find(t, rows, "connections", "send+recv (all-to-all), 1024", "rate / two-peer rate"); small < a2a {
		t.Errorf("1,024 connections (%.2f) should keep more than 2,976 (%.2f)", small, a2a)
	}
	if r := find(t, rows, "dc", "16 DCIs: 256-write bursts", "rate ratio"); r < 20 {
		t.Errorf("DC bursts only %.1fx faster than switching every WQE", r)
	}
}

// Table 11's GDAKI row: the probe's RTT with one background CTA on its
// context is at least the reserved one, which is at least the idle RTT;
// the rows are printed against the paper even where the model falls short.
func TestGDALoadedRows(t *testing.T) {
	t.Parallel()
	rows := pib(t, "gda-loaded", "presets")
	shared := find(t, rows, "gda-loaded", "GDAKI, 64 background CTAs, one shares", "probe RTT p50")
	reserved := find(t, rows, "gda-loaded", "GDAKI, 64 background CTAs, probe context reserved", "probe RTT p50")
	idle := find(t, rows, "presets", "gdaki", "RTT")
	if !(shared >= reserved && reserved >= 0.99*idle) {
		t.Errorf("RTT shared %.2f, reserved %.2f, idle %.2f µs: want shared >= reserved >= idle", shared, reserved, idle)
	}
	if bg := find(t, rows, "gda-loaded", "GDAKI, 64 background CTAs, probe context reserved", "background carried"); bg < 50 {
		t.Errorf("background carried %.1f M msg/s, want tens (the paper: 73-79)", bg)
	}
	n := 0
	for _, r := range withPaper(rows) {
		if r.Experiment == "gda-loaded" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d gda-loaded rows with a paper value, want shared, reserved and their ratio", n)
	}
}

// Every P-IB row with a paper value, rows the model cannot reproduce
// included, keeps a median error at or below 5%; the README's table of
// validate states these figures.
func TestAllPaperRowsAndTheREADME(t *testing.T) {
	t.Parallel()
	all, err := pibRows()
	if err != nil {
		t.Fatal(err)
	}
	rows := withPaper(all)
	sum := Summarize(rows)
	if sum.MedianErr > 0.05 {
		t.Errorf("median error over %d P-IB rows %.2f%%, above 5%%", sum.Rows, 100*sum.MedianErr)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	pct := func(s string) float64 {
		v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
		if err != nil {
			t.Fatalf("README: %q is not a percentage", s)
		}
		return v
	}
	// The README rounds to two significant digits.
	near := func(readme, got float64) bool { return math.Abs(readme-got) <= max(0.05, 0.05*got) }
	m := regexp.MustCompile(`Over all (\d+) rows the median error is ([0-9.]+)%`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README lacks the median over all rows")
	}
	if n, _ := strconv.Atoi(m[1]); n != sum.Rows || !near(pct(m[2]), 100*sum.MedianErr) {
		t.Errorf("README: %s rows at %s%% median; validate has %d at %.2f%%", m[1], m[2], sum.Rows, 100*sum.MedianErr)
	}
	by := map[string][]float64{}
	for _, r := range rows {
		by[r.Experiment] = append(by[r.Experiment], r.RelErr())
	}
	seen := 0
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 || !strings.Contains(cells[0], " (") {
			continue
		}
		name, _, _ := strings.Cut(cells[0], " (")
		errs, ok := by[name]
		if !ok {
			continue
		}
		seen++
		med, _ := stats.Median(errs)
		worst, _ := stats.Max(errs)
		if n, _ := strconv.Atoi(cells[1]); n != len(errs) || !near(pct(cells[2]), 100*med) || !near(pct(cells[3]), 100*worst) {
			t.Errorf("README %s: %s rows, %s median, %s worst; validate: %d, %.2f%%, %.2f%%", name, cells[1], cells[2], cells[3], len(errs), 100*med, 100*worst)
		}
	}
	if seen != len(by) {
		t.Errorf("README lists %d experiments, validate has %d with paper values", seen, len(by))
	}
}
