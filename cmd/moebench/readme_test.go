package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/montanaflynn/stats"

	"moebench/budget"
	readmetext "moebench/internal/readme"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/sweep"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs is the README and docs/performance.md, where the README's
// Performance section points for how its figures come about: the tests of
// those figures read both.
func docs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	return readme(t) + "\n\n" + string(b)
}

// The README's "What moebench run prints" table is the default run's
// output, line for line (the golden file holds that output).
func TestREADMERunTable(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile("testdata/run_default.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := readme(t)
	i := strings.Index(text, "```\npreset      transport   phase")
	if i < 0 {
		t.Fatal("README lacks the run table")
	}
	for _, l := range blockLines(text[i+4:]) {
		if !strings.Contains(string(golden), l+"\n") {
			t.Errorf("README line not in moebench run's output:\n%s", l)
		}
	}
}

// The README's sentence after the run table names the phases the port
// does not bind, as the table (moebench run's output) has them.
func TestREADMERunBounds(t *testing.T) {
	t.Parallel()
	text := readme(t)
	i := strings.Index(text, "```\npreset      transport   phase")
	if i < 0 {
		t.Fatal("README lacks the run table")
	}
	var others []string
	for _, l := range blockLines(text[i+4:])[1:] {
		f := strings.Fields(l)
		if len(f) < 3 || strings.HasPrefix(l, "---") {
			continue
		}
		if bound := f[len(f)-1]; bound != "egress" {
			others = append(others, f[0]+"'s "+f[2])
		}
	}
	want := "Here the 200 Gb/s port binds every phase but " + strings.Join(others, " and ") + ","
	if len(others) == 0 {
		want = "Here the 200 Gb/s port binds every phase"
	}
	if !strings.Contains(readmetext.Flat(text), want) {
		t.Errorf("README lacks %q", want)
	}
}

// blockLines are the lines of a code block's body, up to its closing fence.
func blockLines(body string) []string {
	return strings.Split(strings.TrimSpace(body[:strings.Index(body, "```")]), "\n")
}

// The README's internode normal-mode table is what its sweep prints.
func TestREADMENormalModeTable(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("single-goroutine simulation of a few seconds: nothing for the race detector")
	}
	text := readme(t)
	cmd := "moebench sweep --mode normal --ranks 16,32,64 --tokens 1024 --profile p-roce --transport mini-gda"
	if !strings.Contains(text, cmd) {
		t.Fatal("README lacks the normal-mode sweep")
	}
	recs := csvRows(t, append(strings.Fields(cmd)[1:], "--format", "csv")...)
	// Rows of the README table: | EP | dispatch µs | DeepEP GB/s |
	// scale-out GB/s | combine µs | DeepEP GB/s | bound by |, figures as
	// the table renderer prints them (three significant digits).
	num := func(s string) string {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return report.Num(v)
	}
	want := map[string]string{}
	for _, r := range recs {
		ep, ph := r["ranks"], r["phase"]
		key := "| " + ep + " |"
		if ph == "dispatch" {
			want[key] = key + " " + num(r["mean_us"]) + " | " + num(r["deepep_algo_gbps"]) + " | " + num(r["scaleout_gbps"])
		} else {
			want[key] += " | " + num(r["mean_us"]) + " | " + num(r["deepep_algo_gbps"]) + " | " + r["bound_by"] + " |"
		}
	}
	if len(want) != 3 {
		t.Fatalf("%d EP rows in the sweep, want 3", len(want))
	}
	for _, row := range want {
		if !strings.Contains(text, row+"\n") {
			t.Errorf("README lacks the sweep's row:\n%s", row)
		}
	}
}

// csvRows runs the CLI (its args ask for --format csv) and returns the
// rows of its CSV, comment lines dropped, keyed by column.
func csvRows(t *testing.T, args ...string) []map[string]string {
	t.Helper()
	out, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(body, "\n"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, c := range recs[0] {
			m[c] = r[i]
		}
		rows = append(rows, m)
	}
	return rows
}

// readmeQuotes are README passages quoting modelled runs: each
// {run/preset/phase/column} is that cell of the named run's CSV as the
// table prints it. Whitespace runs compare equal, so passages may wrap.
var readmeQuotes = []struct {
	runs map[string][]string
	text []string
}{
	{map[string][]string{"r": {"run", "--workload", "deepep-ll", "--ranks", "8", "--gpus-per-node", "4", "--preset", "deepep-v1"},
		"buf": {"run", "--workload", "deepep-ll", "--ranks", "8", "--gpus-per-node", "4", "--preset", "deepep-v1", "--set", "fabric.port_buffer_kb=512"}},
		[]string{
			"| dispatch | ≈ 490 µs | {r/deepep-v1/dispatch/mean_us} µs mean ({r/deepep-v1/dispatch/p50_us} p50, {r/deepep-v1/dispatch/max_us} max) |",
			"| dispatch issuing done | ≈ 25 µs | {r/deepep-v1/dispatch/issue_done_us} µs |",
			"| combine issuing done | 24 µs | {r/deepep-v1/combine/issue_done_us} µs |",
			"| combine | median warp 0.93 ms at grid sync | {r/deepep-v1/combine/mean_us} µs |",
			"same run gives a {buf/deepep-v1/dispatch/mean_us} µs dispatch (combine {buf/deepep-v1/combine/mean_us} µs)",
		}},
	{map[string][]string{
		"idle":     {"run", "--tokens", "4", "--transport", "mini-proxy,mini-gda,dc"},
		"shared":   {"run", "--tokens", "4", "--transport", "mini-proxy,mini-gda,dc", "--background", "bulk:16:shared"},
		"reserved": {"run", "--tokens", "4", "--transport", "mini-proxy,mini-gda,dc", "--background", "bulk:16:reserved"}},
		[]string{
			"| mini-proxy (T4/R32/B16) | {idle/mini-proxy/dispatch/mean_us} µs | {shared/mini-proxy/dispatch/mean_us} µs | {reserved/mini-proxy/dispatch/mean_us} µs |",
			"| mini-gda | {idle/mini-gda/dispatch/mean_us} µs | {shared/mini-gda/dispatch/mean_us} µs | {reserved/mini-gda/dispatch/mean_us} µs |",
			"| dc | {idle/dc/dispatch/mean_us} µs | {shared/dc/dispatch/mean_us} µs | {reserved/dc/dispatch/mean_us} µs |",
		}},
}

var placeholder = regexp.MustCompile(`\{([^/{}]+)/([^/{}]+)/([^/{}]+)/([^/{}]+)\}`)

func TestREADMEQuotesModelledRuns(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("single-goroutine simulations of seconds: nothing for the race detector")
	}
	text := readmeFlat(t)
	for _, q := range readmeQuotes {
		rows := map[string][]map[string]string{}
		for name, args := range q.runs {
			rows[name] = csvRows(t, append(args, "--format", "csv")...)
		}
		for _, want := range q.text {
			got := placeholder.ReplaceAllStringFunc(want, func(ph string) string {
				m := placeholder.FindStringSubmatch(ph)
				for _, r := range rows[m[1]] {
					if r["preset"] == m[2] && r["phase"] == m[3] {
						v, err := strconv.ParseFloat(r[m[4]], 64)
						if err != nil {
							t.Errorf("%s: %v", ph, err)
						}
						return report.Num(v)
					}
				}
				t.Errorf("moebench %s prints no %s", strings.Join(q.runs[m[1]], " "), ph)
				return ph
			})
			if got = readmetext.Flat(got); !strings.Contains(text, got) {
				t.Errorf("README does not quote the runs as\n%s", got)
			}
		}
	}
}

// pct prints a relative error as the README's validate tables do.
func pct(v float64) string {
	switch p := 100 * v; {
	case p == 0:
		return "0%"
	case p < 10:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	default:
		return strconv.FormatFloat(p, 'f', 0, 64) + "%"
	}
}

// validateErrors runs validate on a profile and returns the relative
// errors per experiment, in the order printed, and all of them.
func validateErrors(t *testing.T, prof string, args ...string) (order []string, by map[string]stats.Float64Data, all stats.Float64Data) {
	t.Helper()
	return validateRowErrors(t, csvRows(t, append([]string{"validate", "--profile", prof, "--format", "csv"}, args...)...))
}

// validateRowErrors is validateErrors over rows already run.
func validateRowErrors(t *testing.T, rows []map[string]string) (order []string, by map[string]stats.Float64Data, all stats.Float64Data) {
	t.Helper()
	by = map[string]stats.Float64Data{}
	for _, r := range rows {
		e, err := strconv.ParseFloat(r["rel_err"], 64)
		if err != nil || math.IsNaN(e) {
			continue
		}
		x := r["experiment"]
		if by[x] == nil {
			order = append(order, x)
		}
		by[x] = append(by[x], e)
		all = append(all, e)
	}
	return order, by, all
}

// The README's "How close the model is" table and summaries are what
// validate prints on P-IB and GB200.
func TestREADMEValidateSummaries(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("seconds of single-goroutine models: nothing for the race detector")
	}
	text := readme(t)
	order, by, all := validateErrors(t, "p-ib")
	checkValidateTable(t, text, order, by)
	med, _ := all.Median()
	if want := fmt.Sprintf("Over all %d rows the median error is %s.", len(all), pct(med)); !strings.Contains(text, want) {
		t.Errorf("README lacks %q", want)
	}
	_, _, gb := validateErrors(t, "p-gb200", "--only", "single-op,ordering")
	med, _ = gb.Median()
	want := fmt.Sprintf("`validate --profile p-gb200` compares with the GB200 columns of Tables 3 and 4 (%d rows, %s median)", len(gb), pct(med))
	if !strings.Contains(readmetext.Flat(text), want) {
		t.Errorf("README lacks %q", want)
	}
}

// checkValidateTable checks that text's validate table has, for each
// experiment, the row count, median and worst error validate printed.
func checkValidateTable(t *testing.T, text string, order []string, by map[string]stats.Float64Data) {
	t.Helper()
	for _, x := range order {
		med, _ := by[x].Median()
		worst, _ := by[x].Max()
		re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(x) + `( \([^|]*\))? \| (\d+) \| ([^|]+) \| ([^|]+) \|$`)
		m := re.FindStringSubmatch(text)
		if m == nil {
			t.Errorf("README's validate table has no row for %s", x)
			continue
		}
		if got, want := m[2]+" | "+strings.TrimSpace(m[3])+" | "+strings.TrimSpace(m[4]), fmt.Sprintf("%d | %s | %s", len(by[x]), pct(med), pct(worst)); got != want {
			t.Errorf("README: %s | %s, validate prints %s", x, got, want)
		}
	}
}

// The README's replay example: its quoted lines and figures are what the
// two commands it shows print.
func TestREADMEReplayExample(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("seconds of single-goroutine simulation: nothing for the race detector")
	}
	text := readme(t)
	norm := readmetext.Flat
	dir := t.TempDir()
	replay := func(routing, transports string) string {
		path := filepath.Join(dir, strings.ReplaceAll(routing, ":", "-")+".bin")
		if _, _, err := runCLI(t, "trace", "gen", "--routing", routing, "--experts", "64", "--topk", "8", "--ranks", "16", "--tokens", "32", "--layers", "2", "--out", path); err != nil {
			t.Fatal(err)
		}
		out, _, err := runCLI(t, "replay", "--trace", path, "--transport", transports)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := replay("powerlaw:1.2", "mini-gda,mini-proxy")
	const cmd = "moebench replay --trace skew.bin --transport mini-gda,mini-proxy\n```\n\n```\n"
	i := strings.Index(text, cmd)
	if i < 0 || !strings.Contains(text, "moebench trace gen --routing powerlaw:1.2 --experts 64 --topk 8 --ranks 16 --tokens 32 --layers 2 --out skew.bin") {
		t.Fatal("README lacks the replay example's commands")
	}
	printed := map[string]bool{}
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		printed[norm(l)] = true
		rows = append(rows, strings.Fields(l))
	}
	for _, l := range blockLines(text[i+len(cmd):]) {
		if norm(l) != "..." && !printed[norm(l)] {
			t.Errorf("README line not in replay's output:\n%s", l)
		}
	}
	// The figures of the sentence below it.
	find := func(prefix ...string) []string {
		for _, f := range rows {
			if len(f) >= len(prefix) && slices.Equal(f[:len(prefix)], prefix) {
				return f
			}
		}
		t.Fatalf("replay prints no row %v", prefix)
		return nil
	}
	share := find("rank")[5]
	wire := slices.Index(find("preset", "phase", "of"), "wire") + 1 // "all ranks" is two fields
	slow, all := find("mini-gda", "dispatch", "slowest", "rank")[wire], find("mini-gda", "dispatch", "all", "ranks")[wire]
	uni := replay("uniform", "mini-gda")
	uniform := strings.Fields(uni[strings.Index(uni, "mini-gda  mini-gda   dispatch"):])[4]
	want := fmt.Sprintf("it receives %s of all selections, and its dispatch is bound by its inbound wire (%s µs against %s µs for the average rank). "+
		"The same shape generated uniform (`moebench trace gen --routing uniform ...`) dispatches in %s µs per layer.", share, slow, all, uniform)
	if !strings.Contains(norm(text), want) {
		t.Errorf("README lacks %q", want)
	}
}

// The README's refusal of 16,384 ranks is what moebench says, word for
// word: the estimate side by side and in turn, before any work.
func TestREADMEScaleRefusal(t *testing.T) {
	t.Parallel()
	text := readme(t)
	i := strings.Index(text, "```\n$ moebench run --ranks 16384")
	if i < 0 {
		t.Fatal("README lacks the 16,384-rank refusal")
	}
	lines := blockLines(text[i+4:])
	if len(lines) != 2 {
		t.Fatalf("the refusal block has %d lines, want the command and its answer", len(lines))
	}
	_, _, err := runCLI(t, strings.Fields(strings.TrimPrefix(lines[0], "$ moebench "))...)
	if err == nil {
		t.Fatal("moebench ran 16,384 ranks instead of refusing them")
	}
	if got := "moebench: " + message(err); got != lines[1] {
		t.Errorf("moebench says\n%s\nthe README\n%s", got, lines[1])
	}
}

// The README's launch limit is the model's for P-IB's GPU, and the header
// line it names is what a layer past it prints.
func TestREADMELaunchLimit(t *testing.T) {
	t.Parallel()
	text := readme(t)
	const claim = "Past 4,224 experts no GPU of 132 SMs runs that layer"
	if !strings.Contains(text, claim) || !strings.Contains(text, "(`# ll launch: ...`)") {
		t.Fatal("README lacks the LL launch limit or its header line")
	}
	sms := int(profile.MustLoad("p-ib").Get("gpu.sms"))
	at := func(experts int) moe.Shape {
		return moe.Shape{Experts: experts, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: experts, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	}
	if limit, beyond := moe.LLBeyondDeepEP(at(4224), 0, sms); sms != 132 || limit != 4224 || beyond {
		t.Errorf("P-IB's %d SMs: 4,224 experts give limit %d, beyond %v", sms, limit, beyond)
	}
	if _, beyond := moe.LLBeyondDeepEP(at(4232), 0, sms); !beyond {
		t.Error("4,232 experts are not past the launch")
	}
	// One SM of 32 warp groups, 64 experts.
	out, _, err := layerCLI(t, runCmd, "--transport", "mini-gda", "--num-sms", "1", "--ranks", "8", "--gpus-per-node", "4",
		"--experts", "64", "--tokens", "16", "--hidden", "1024")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\n# ll launch: ") {
		t.Errorf("a layer past its launch prints no '# ll launch: ' line:\n%s", out)
	}
}

// The README's state per (rank, expert) pair is what the memory estimate
// charges one, side by side and in turn: two shapes that differ only in
// experts per rank, with the same launch (132 SMs of 32 warps posting),
// differ by that many bytes a pair.
func TestREADMEStatePerPair(t *testing.T) {
	t.Parallel()
	m := regexp.MustCompile(`the\s+estimate\s+charges\s+each\s+\(rank,\s+expert\)\s+pair\s+about\s+(\d+)\s+bytes\s+side\s+by\s+side\s+and\s+(\d+)\s+in\s+turn`).FindStringSubmatch(docs(t))
	if m == nil {
		t.Fatal("README and docs/performance.md lack the state per (rank, expert) pair")
	}
	const ranks = 4 * 132
	cost := func(experts int) moe.Cost {
		return layerCost(sweep.Point{Shape: deepseekShape(ranks, experts, 128), Mode: moe.LL}, "mini-gda", 0)
	}
	lo, hi := cost(10*ranks), cost(11*ranks)
	for k, per := range []float64{float64(hi.Bytes-lo.Bytes) / (ranks * ranks), float64(hi.InTurn-lo.InTurn) / (ranks * ranks)} {
		claim, _ := strconv.Atoi(m[1+k])
		if math.Abs(per-float64(claim)) > 0.05*per {
			t.Errorf("README says about %d bytes a pair (%s); the estimate charges %.0f", claim, []string{"side by side", "in turn"}[k], per)
		}
	}
}

// The README's ratios of the estimate to peaks away from the scale
// table (where it falls short, and normal layers) are the estimate run
// makes now against the peaks it quotes, and the 4,096-rank layer it says
// now runs in turn under --max-memory 6GB fits so and only so.
func TestREADMEEstimateElsewhere(t *testing.T) {
	t.Parallel()
	text := readmetext.Flat(docs(t))
	ratio := func(c sweep.Point, mech string, mib string) string {
		v, _ := strconv.ParseFloat(strings.ReplaceAll(mib, ",", ""), 64)
		return fmt.Sprintf("%.2f", float64(layerCost(c, mech, 0).Bytes)/(v*(1<<20)))
	}
	ll := func(ranks, experts, tokens int) sweep.Point {
		return sweep.Point{Shape: deepseekShape(ranks, experts, tokens), Mode: moe.LL}
	}
	normal := func(ranks int) sweep.Point {
		return sweep.Point{Shape: deepseekShape(ranks, 256, 4096), Mode: moe.Normal}
	}
	m := regexp.MustCompile(`([\d.]+)× and ([\d.]+)× the peaks of 16 and 32 ranks × 256 experts × 511 tokens over mini-gda \((\d+) and (\d+) MiB\), and ([\d.]+)× through mini-proxy at 64 ranks \((\d+) MiB\)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README and docs/performance.md lack where the estimate falls short")
	}
	for _, c := range []struct {
		quoted, got string
	}{{m[1], ratio(ll(16, 256, 511), "mini-gda", m[3])}, {m[2], ratio(ll(32, 256, 511), "mini-gda", m[4])},
		{m[5], ratio(ll(64, 256, 511), "mini-proxy", m[6])}} {
		if c.quoted != c.got {
			t.Errorf("README says the estimate is %s× a peak it falls short of; it is %s×", c.quoted, c.got)
		}
	}
	m = regexp.MustCompile(`([\d.]+)× and ([\d.]+)× their peaks of ([\d,]+) and ([\d,]+) MiB at 128 and 256 ranks × 4,096 tokens on p-roce`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README and docs/performance.md lack the estimate against normal layers' peaks")
	}
	for k, r := range []int{128, 256} {
		if got := ratio(normal(r), "mini-gda", m[3+k]); got != m[1+k] {
			t.Errorf("README says the estimate is %s× the normal layer's peak at %d ranks; it is %s×", m[1+k], r, got)
		}
	}
	if !strings.Contains(text, "so that it refused the 4,096-rank layer `--max-memory 6GB`, which it now runs in turn") {
		t.Fatal("README and docs/performance.md lack the 4,096-rank layer under --max-memory 6GB")
	}
	if c := layerCost(ll(4096, 4096, 128), "mini-gda", 0); !(c.InTurn <= 6e9 && c.Bytes > 6e9) {
		t.Errorf("4,096 ranks: estimates %d side by side and %d in turn, want only in turn within 6 GB", c.Bytes, c.InTurn)
	}
}

// The README says the estimate stays above normal layers' side-by-side
// peaks and quotes one: the command it names, estimated now, must be
// above that peak (and not far above, or the claim says little).
func TestREADMENormalPeakUnderEstimate(t *testing.T) {
	t.Parallel()
	m := regexp.MustCompile("\\(`moebench (run --mode normal [^`]+)`\\) took [\\d.]+× the wall time of the two in turn \\([^)]*\\) and peaked at (\\d+) against \\d+ MiB\\. The estimate stays above normal layers' peaks side by side").FindStringSubmatch(readmetext.Flat(docs(t)))
	if m == nil {
		t.Fatal("README and docs/performance.md lack the normal-mode side-by-side peak and its command")
	}
	peak, _ := strconv.ParseFloat(m[2], 64)
	_, _, err := runCLI(t, append(strings.Fields(m[1]), "--max-memory", "1KB")...)
	est := regexp.MustCompile(`would need about ([\d.]+) MiB`).FindStringSubmatch(fmt.Sprint(err))
	if est == nil {
		t.Fatalf("moebench %s --max-memory 1KB: %v, want a refusal naming its estimate in MiB", m[1], err)
	}
	if v, _ := strconv.ParseFloat(est[1], 64); v < peak || v > 2*peak {
		t.Errorf("moebench %s estimates %.1f MiB; the README's peak side by side is %.0f MiB", m[1], v, peak)
	}
}

// The README's ratios of the memory estimate to the measured peaks are
// the estimate run makes now against the peaks the README quotes: its
// scale table and its 8,192-rank runs. A change to the estimate, or to a
// quoted peak, without the ratios fails here.
func TestREADMEEstimateAgainstPeaks(t *testing.T) {
	t.Parallel()
	raw := docs(t)
	text := readmetext.Flat(raw) // prose rewraps freely
	gib := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("peak %q: %v", s, err)
		}
		return v * (1 << 30)
	}
	// peaks[ranks] = side-by-side peaks, in-turn peaks (a range gives two).
	peaks := map[int][2][]float64{}
	row := regexp.MustCompile(`(?m)^\| ([\d,]+) \| [^,|]+, ([\d.]+)(?:–([\d.]+))? GiB \| [^,|]+, ([\d.]+)(?:–([\d.]+))? GiB[^|]*\|$`)
	for _, m := range row.FindAllStringSubmatch(raw, -1) {
		r, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
		var side, turn []float64
		for _, v := range m[2:4] {
			if v != "" {
				side = append(side, gib(v))
			}
		}
		for _, v := range m[4:6] {
			if v != "" {
				turn = append(turn, gib(v))
			}
		}
		peaks[r] = [2][]float64{side, turn}
	}
	m := regexp.MustCompile("this build took \\d+ s for 8,192 ranks side by side and peaked at ([\\d.]+) GiB, and [\\d–]+ s and ([\\d.]+) GiB in turn \\(`--max-memory (\\d+)GiB`").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README and docs/performance.md lack the 8,192-rank peaks")
	}
	c8k := layerCost(sweep.Point{Shape: deepseekShape(8192, 8192, 128), Mode: moe.LL}, "mini-gda", 0)
	if budget, _ := strconv.ParseFloat(m[3], 64); !(float64(c8k.InTurn) <= budget*(1<<30) && float64(c8k.Bytes) > budget*(1<<30)) {
		t.Errorf("8,192 ranks: estimates %d side by side and %d in turn, want only in turn within %s GiB", c8k.Bytes, c8k.InTurn, m[3])
	}
	turn8k := gib(m[2])
	peaks[8192] = [2][]float64{{gib(m[1])}, {turn8k}}
	for _, r := range []int{512, 1024, 2048, 4096} {
		if _, ok := peaks[r]; !ok {
			t.Fatalf("the scale table has no row for %d ranks", r)
		}
	}
	type span struct{ lo, hi float64 }
	widen := func(s *span, v float64) {
		if s.lo == 0 || v < s.lo {
			s.lo = v
		}
		s.hi = max(s.hi, v)
	}
	var ratio [2]span // side by side, in turn
	var held, held8k span
	for r, p := range peaks {
		c := layerCost(sweep.Point{Shape: deepseekShape(r, r, 128), Mode: moe.LL}, "mini-gda", 0)
		for k, est := range []float64{float64(c.Bytes), float64(c.InTurn)} {
			for _, v := range p[k] {
				widen(&ratio[k], est/v)
				switch {
				case r == 8192:
					widen(&held8k, v/est)
				case r >= 1024:
					widen(&held, v/est)
				}
			}
		}
	}
	f := func(s span) string {
		lo, hi := fmt.Sprintf("%.2f", s.lo), fmt.Sprintf("%.2f", s.hi)
		if lo == hi {
			return lo
		}
		return lo + "–" + hi
	}
	// The in-turn peaks scaled by (rank, expert) pairs to 16,384 ranks.
	turn4k := peaks[4096][1]
	if len(turn4k) != 1 {
		t.Fatal("the README should quote one in-turn peak at 4,096 ranks")
	}
	gb := func(v float64) string { return fmt.Sprintf("%.2f", v/(1<<30)) }
	scaled := []float64{turn4k[0] * 16 / (1 << 30), turn8k * 4 / (1 << 30)}
	// The 16,384-rank run: in turn under the budget it names, its peak's
	// share of the estimate, and bytes a (rank, expert) pair there and at
	// 4,096 and 8,192 ranks, from the peaks quoted.
	m = regexp.MustCompile("`moebench run --ranks 16384 --experts 16384 --transport mini-gda --max-memory (\\d+)GiB` simulated dispatch and then combine in [^,]+ and peaked at ([\\d.]+) GiB, ([\\d.]+) of the estimate in turn: (\\d+) bytes a pair, against (\\d+) at 4,096 ranks and (\\d+) at 8,192").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README and docs/performance.md lack the 16,384-rank run")
	}
	c16k := layerCost(sweep.Point{Shape: deepseekShape(16384, 16384, 128), Mode: moe.LL}, "mini-gda", 0)
	if budget, _ := strconv.ParseFloat(m[1], 64); !(float64(c16k.InTurn) <= budget*(1<<30) && float64(c16k.Bytes) > budget*(1<<30)) {
		t.Errorf("16,384 ranks: estimates %d side by side and %d in turn, want only in turn within %s GiB", c16k.Bytes, c16k.InTurn, m[1])
	}
	peak16k := gib(m[2])
	if got := fmt.Sprintf("%.2f", peak16k/float64(c16k.InTurn)); got != m[3] {
		t.Errorf("README says the 16,384-rank peak is %s of the estimate in turn; it is %s", m[3], got)
	}
	for k, p := range []struct {
		ranks int
		peak  float64
	}{{16384, peak16k}, {4096, turn4k[0]}, {8192, turn8k}} {
		if got := fmt.Sprintf("%.0f", p.peak/float64(p.ranks*p.ranks)); got != m[4+k] {
			t.Errorf("README says %s bytes a pair at %d ranks in turn; its peak makes %s", m[4+k], p.ranks, got)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("4,096 ranks (16.8 M pairs a phase) peaked at %s GiB and 8,192 (67 M) at %.1f GiB, and scaled by their pairs to 16,384 ranks they would need %.0f–%.0f GiB",
			gb(turn4k[0]), turn8k/(1<<30), slices.Min(scaled), slices.Max(scaled)),
		"over mini-gda the estimate is " + f(ratio[0]) + "× this build's peaks side by side at 512 to 8,192 ranks and " + f(ratio[1]) + "× in turn at 512 to 8,192",
		"this build holds " + f(held) + " of the estimate at 1,024 to 4,096 ranks and " + f(held8k) + " at 8,192",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README and docs/performance.md lack %q", want)
		}
	}
}

// The scale table ran each layer in turn with a --max-memory between its
// two estimates: each budget the README names must be under the estimate
// side by side and at least the one in turn, as moebench estimates now,
// and the 4,096-rank peak in GB is the one in GiB.
func TestREADMEScaleTableBudgets(t *testing.T) {
	t.Parallel()
	raw := docs(t)
	text := readmetext.Flat(raw)
	m := regexp.MustCompile("in turn with `--max-memory` between the two estimates: (\\w+), (\\w+), (\\w+) and (\\w+)\\)").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("README lacks the scale table's budgets")
	}
	for i, ranks := range []int{512, 1024, 2048, 4096} {
		budget, err := budget.ParseBytes(m[1+i])
		if err != nil {
			t.Fatalf("budget %q: %v", m[1+i], err)
		}
		c := layerCost(sweep.Point{Shape: deepseekShape(ranks, ranks, 128), Mode: moe.LL}, "mini-gda", 0)
		if !(c.InTurn <= budget && budget < c.Bytes) {
			t.Errorf("%d ranks: --max-memory %s (%d bytes) is not between the estimates in turn (%d) and side by side (%d)", ranks, m[1+i], budget, c.InTurn, c.Bytes)
		}
	}
	g := regexp.MustCompile(`(?m)^\| 4,096 \| [^|]+\| [^,|]+, ([\d.]+) GiB \(([\d.]+) GB\) \|$`).FindStringSubmatch(raw)
	if g == nil {
		t.Fatal("the scale table's 4,096-rank row lacks its peak in GiB and GB")
	}
	gibV, _ := strconv.ParseFloat(g[1], 64)
	if got := fmt.Sprintf("%.2f", gibV*(1<<30)/1e9); got != g[2] {
		t.Errorf("the 4,096-rank peak of %s GiB is %s GB, not %s", g[1], got, g[2])
	}
}
