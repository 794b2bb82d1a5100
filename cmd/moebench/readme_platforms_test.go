package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"moebench/internal/report"
)

// platformRuns are the two runs the README's platform table quotes for a
// profile: DeepSeek-V3's LL decode at EP64 and its normal-mode prefill at
// EP32 (4,096 tokens a rank), on mini-gda, the GPU-initiated RC mechanism
// closest to DeepEP's own.
func platformRuns(prof string) [][]string {
	per := []string{}
	if prof == "p-gb200" {
		per = []string{"--gpus-per-node", "4"}
	}
	base := append([]string{"run", "--profile", prof, "--transport", "mini-gda", "--format", "json"}, per...)
	return [][]string{
		append(append([]string{}, base...), "--ranks", "64"),
		append(append([]string{}, base...), "--ranks", "32", "--mode", "normal", "--tokens", "4096"),
	}
}

// platformRow is the README table's row of prof: the runs' mean dispatch
// and combine times and what bound each.
func platformRow(t *testing.T, prof string) string {
	t.Helper()
	cells := []string{"`" + prof + "`"}
	for _, args := range platformRuns(prof) {
		cells = append(cells, phaseCells(t, args...)...)
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// phaseCells runs a one-result `run --format json` and gives the README
// tables' two cells of it: "dispatch / combine" mean µs as the table
// prints them, and what bound each.
func phaseCells(t *testing.T, args ...string) []string {
	t.Helper()
	out, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr)
	}
	var doc struct {
		Results []struct {
			Dispatch, Combine struct {
				Mean    float64 `json:"mean_us"`
				BoundBy string  `json:"bound_by"`
			}
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.Results[0]
	return []string{fmt.Sprintf("%s / %s", report.Num(r.Dispatch.Mean), report.Num(r.Combine.Mean)),
		fmt.Sprintf("%s / %s", r.Dispatch.BoundBy, r.Combine.BoundBy)}
}

// The README's platform table is what moebench run predicts on each
// built-in platform.
func TestREADMEPlatformTable(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-runs 14 layers; the race detector adds nothing to what the plain run checks")
	}
	text := readme(t)
	for _, prof := range []string{"p-ib", "p-h100", "p-h800", "p-b200", "p-roce", "p-gb200", "p-b300"} {
		t.Run(prof, func(t *testing.T) {
			t.Parallel()
			row := platformRow(t, prof)
			// The README's row may carry a platform column after the
			// profile's: compare the figures only.
			cells := strings.Split(row, " | ")
			want := cells[0] + " | "
			i := strings.Index(text, "\n"+want)
			if i < 0 {
				t.Fatalf("README's platform table lacks a row for %s; want\n%s", prof, row)
			}
			line := text[i+1:]
			line = line[:strings.IndexByte(line, '\n')]
			if !strings.HasSuffix(line, strings.Join(cells[1:], " | ")) {
				t.Errorf("README's row\n%s\nwant its figures as\n%s", line, row)
			}
		})
	}
}
