package main

import (
	"encoding/csv"
	"os"
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
	out, _, err := runCLI(t, append(strings.Fields(cmd)[1:], "--format", "csv")...)
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
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
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
	for _, r := range recs[1:] {
		ep, ph := r[col["ranks"]], r[col["phase"]]
		key := "| " + ep + " |"
		if ph == "dispatch" {
			want[key] = key + " " + num(r[col["mean_us"]]) + " | " + num(r[col["deepep_algo_gbps"]]) + " | " + num(r[col["scaleout_gbps"]])
		} else {
			want[key] += " | " + num(r[col["mean_us"]]) + " | " + num(r[col["deepep_algo_gbps"]]) + " | " + r[col["bound_by"]] + " |"
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
