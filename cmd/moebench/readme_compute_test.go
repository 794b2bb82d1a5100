package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"moebench/internal/report"
	"moebench/results"
)

// computeRuns are the two runs the README's table of the whole layer
// quotes: DeepSeek-V3's LL decode at EP64 (128 tokens a rank) without
// overlap and with two micro-batches on the receive hook, and its
// normal-mode prefill at EP32 (4,096 tokens a rank) without overlap and
// with two micro-batches; every preset, on P-H100, whose compute constants
// are fitted to an H100.
var computeRuns = [][]string{
	{"run", "--profile", "p-h100", "--preset", "all", "--ranks", "64", "--tokens", "128", "--overlap", "none,hook", "--format", "json"},
	{"run", "--profile", "p-h100", "--preset", "all", "--ranks", "32", "--tokens", "4096", "--mode", "normal", "--overlap", "none,two-batch", "--format", "json"},
}

// computeTableRows runs computeRuns and gives the README table's rows:
// per preset, layer and exposed µs of each run, and what binds the
// overlapped ones.
func computeTableRows(t *testing.T) []string {
	t.Helper()
	docs := make([]results.Layer, len(computeRuns))
	var wg sync.WaitGroup
	errs := make([]error, len(computeRuns))
	for i, args := range computeRuns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, stderr, err := runCLI(t, args...)
			if err != nil {
				errs[i] = fmt.Errorf("%v: %v\n%s", args, err, stderr)
				return
			}
			errs[i] = json.Unmarshal([]byte(out), &docs[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each run's results come preset by preset, each under its two
	// schedules in turn.
	var rows []string
	for j := 0; j+1 < len(docs[0].Results); j += 2 {
		cells := []string{"`" + docs[0].Results[j].Preset + "`"}
		for i := range docs {
			for k := range 2 {
				c := docs[i].Results[j+k].Compute
				cells = append(cells, fmt.Sprintf("%s / %s", report.Num(c.LayerUs), report.Num(c.ExposedUs)))
				if k == 1 {
					cells = append(cells, c.BoundBy)
				}
			}
		}
		rows = append(rows, "| "+strings.Join(cells, " | ")+" |")
	}
	return rows
}

// The README's table of the whole MoE layer is what moebench run
// predicts.
func TestREADMEComputeTable(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-runs 24 layers and their micro-batches; the race detector adds nothing to what the plain run checks")
	}
	text := readme(t)
	for _, row := range computeTableRows(t) {
		if !strings.Contains(text, "\n"+row+"\n") {
			t.Errorf("README's table of the whole layer lacks the row\n%s", row)
		}
	}
}
