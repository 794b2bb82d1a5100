package main

import (
	"encoding/csv"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"moebench/internal/report"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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
	block := text[i+4:]
	block = block[:strings.Index(block, "```")]
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.Contains(string(golden), l+"\n") {
			t.Errorf("README line not in moebench run's output:\n%s", l)
		}
	}
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
		"idle":     {"run", "--tokens", "4", "--transport", "mini-proxy,mini-gda"},
		"shared":   {"run", "--tokens", "4", "--transport", "mini-proxy,mini-gda", "--background", "bulk:16:shared"},
		"reserved": {"run", "--tokens", "4", "--transport", "mini-proxy,mini-gda", "--background", "bulk:16:reserved"}},
		[]string{
			"| mini-proxy (T4/R32/B16) | {idle/mini-proxy/dispatch/mean_us} µs | {shared/mini-proxy/dispatch/mean_us} µs | {reserved/mini-proxy/dispatch/mean_us} µs |",
			"| mini-gda | {idle/mini-gda/dispatch/mean_us} µs | {shared/mini-gda/dispatch/mean_us} µs | {reserved/mini-gda/dispatch/mean_us} µs |",
		}},
}

var placeholder = regexp.MustCompile(`\{([^/{}]+)/([^/{}]+)/([^/{}]+)/([^/{}]+)\}`)

func TestREADMEQuotesModelledRuns(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("single-goroutine simulations of seconds: nothing for the race detector")
	}
	text := strings.Join(strings.Fields(readme(t)), " ")
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
			if got = strings.Join(strings.Fields(got), " "); !strings.Contains(text, got) {
				t.Errorf("README does not quote the runs as\n%s", got)
			}
		}
	}
}
