package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/montanaflynn/stats"

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
	var order []string
	by := map[string]stats.Float64Data{}
	var all stats.Float64Data
	model := map[string]string{}
	for _, r := range recs {
		e, err := strconv.ParseFloat(r["rel_err"], 64)
		if err != nil || math.IsNaN(e) {
			t.Fatalf("row %v: no error", r)
		}
		x := r["experiment"]
		if by[x] == nil {
			order = append(order, x)
		}
		by[x] = append(by[x], e)
		all = append(all, e)
		m, _ := strconv.ParseFloat(r["model"], 64)
		model[x+" "+strings.Split(r["case"], ",")[0]+" "+r["metric"]] = fmt.Sprintf("%.0f", m)
	}
	for _, x := range order {
		med, _ := by[x].Median()
		worst, _ := by[x].Max()
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(x) + ` \([^|]*\) \| (\d+) \| ([^|]+) \| ([^|]+) \|$`).FindStringSubmatch(sec)
		if m == nil {
			t.Errorf("README's DeepEP table has no row for %s", x)
			continue
		}
		if got, want := m[1]+" | "+strings.TrimSpace(m[2])+" | "+strings.TrimSpace(m[3]), fmt.Sprintf("%d | %s | %s", len(by[x]), pct(med), pct(worst)); got != want {
			t.Errorf("README: %s | %s, validate prints %s", x, got, want)
		}
	}
	med, _ := all.Median()
	if want := fmt.Sprintf("Over all %d rows the median error is %s.", len(all), pct(med)); !strings.Contains(sec, want) {
		t.Errorf("README lacks %q", want)
	}
	want := fmt.Sprintf("(%s and %s µs against 186 and 192)", model["ll-rdma EP64 dispatch mean µs"], model["ll-rdma EP128 dispatch mean µs"])
	if !strings.Contains(strings.Join(strings.Fields(sec), " "), want) {
		t.Errorf("README lacks %q", want)
	}
}
