package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"moebench/published"
)

// The README's table of DeepEP's published runs, its summary and the
// figures it quotes are what validate --against deepep prints.
func TestREADMEDeepEPSuite(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("seconds of single-goroutine models: nothing for the race detector")
	}
	text := readme(t)
	sec := text[strings.Index(text, "### DeepEP's published runs, predicted"):]
	sec = sec[:strings.Index(sec, "\n## ")]
	recs := csvRows(t, "validate", "--against", "deepep", "--format", "csv")
	if n := len(published.DeepEP().Rows); len(recs) != n {
		t.Fatalf("%d rows, want the suite's %d", len(recs), n)
	}
	order, by, all := validateRowErrors(t, recs)
	if len(all) != len(recs) {
		t.Fatalf("%d of %d rows have an error", len(all), len(recs))
	}
	model := map[string]string{}
	for _, r := range recs {
		m, _ := strconv.ParseFloat(r["model"], 64)
		model[r["experiment"]+" "+strings.Split(r["case"], ",")[0]+" "+r["metric"]] = fmt.Sprintf("%.0f", m)
	}
	checkValidateTable(t, sec, order, by)
	// The table is the whole suite: a row an experiment, in validate's
	// order, each with the range of its EP sizes, and no other row.
	eps := map[string][]int{}
	for _, r := range recs {
		ep, err := strconv.Atoi(strings.TrimPrefix(strings.Split(r["case"], ",")[0], "EP"))
		if err != nil {
			t.Fatalf("case %q: %v", r["case"], err)
		}
		eps[r["experiment"]] = append(eps[r["experiment"]], ep)
	}
	var want, got []string
	for _, x := range order {
		lo, hi := slices.Min(eps[x]), slices.Max(eps[x])
		span := fmt.Sprintf("EP%d", lo)
		if hi > lo {
			span += fmt.Sprintf("-%d", hi)
		}
		want = append(want, x+" ("+span+")")
	}
	for _, m := range regexp.MustCompile(`(?m)^\| ([^|]+?) \| \d+ \|`).FindAllStringSubmatch(sec, -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, want) {
		t.Errorf("README's suite table has rows\n  %q\nvalidate prints\n  %q", got, want)
	}
	med, _ := all.Median()
	if want := fmt.Sprintf("Over all %d rows the median error is %s.", len(all), pct(med)); !strings.Contains(sec, want) {
		t.Errorf("README lacks %q", want)
	}
	quote := fmt.Sprintf("(%s and %s µs against 186 and 192)", model["ll-rdma EP64 dispatch mean µs"], model["ll-rdma EP128 dispatch mean µs"])
	if !strings.Contains(strings.Join(strings.Fields(sec), " "), quote) {
		t.Errorf("README lacks %q", quote)
	}
}
