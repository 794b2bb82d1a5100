package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"moebench/budget"
	"moebench/moe"
	"moebench/sweep"
)

// A sweep's points run concurrently; its results must be, in order, those
// of the same points run one at a time.
func TestSweepMatchesSerialRuns(t *testing.T) {
	t.Parallel()
	base := []string{"--gpus-per-node", "4", "--experts", "32", "--hidden", "1024", "--transport", "mini-gda,dc", "--format", "json"}
	out, _, err := layerCLI(t, sweepCmd, append(base, "--ranks", "8,16", "--tokens", "8,16")...)
	if err != nil {
		t.Fatal(err)
	}
	results := func(s string) []json.RawMessage {
		var doc struct {
			Results []json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
		return doc.Results
	}
	var want []json.RawMessage
	for _, r := range []string{"8", "16"} {
		for _, tok := range []string{"8", "16"} {
			o, _, err := layerCLI(t, runCmd, append(base, "--ranks", r, "--tokens", tok)...)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, results(o)...)
		}
	}
	got := results(out)
	if len(got) != len(want) {
		t.Fatalf("sweep gave %d results, the runs %d", len(got), len(want))
	}
	for i := range got {
		var g, w map[string]any
		_ = json.Unmarshal(got[i], &g)
		_ = json.Unmarshal(want[i], &w)
		// A sweep names the values it swept; a run has none.
		delete(g, "swept")
		delete(w, "swept")
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("point %d: sweep\n%s\nwant (run)\n%s", i, gb, wb)
		}
	}
}

// deepseekShape is a layer of deepseek-v3's width (hidden 7,168, top-8,
// FP8 dispatch, BF16 combine, 8 GPUs a node) of ranks × experts × tokens,
// as the memory tests estimate it.
func deepseekShape(ranks, experts, tokens int) moe.Shape {
	return moe.Shape{Experts: experts, TopK: 8, Hidden: 7168, Tokens: tokens, Ranks: ranks, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
}

// A layer whose side-by-side estimate exceeds --max-memory but whose
// in-turn estimate fits runs dispatch and combine in turn, says so, and
// gives the same results.
func TestRunInTurnToFitMemory(t *testing.T) {
	t.Parallel()
	// In turn saves memory from a few hundred ranks (moe.EstimateCost).
	args := []string{"--ranks", "256", "--experts", "2048", "--tokens", "8", "--transport", "mini-gda", "--format", "json"}
	c := layerCost(sweep.Point{Shape: deepseekShape(256, 2048, 8), Mode: moe.LL}, "mini-gda", 0)
	budget := strconv.FormatInt((c.Bytes+c.InTurn)/2, 10)
	stderr := sameWithin(t, runCmd, args, budget, "info")
	if !strings.Contains(stderr, "dispatch and combine in turn") {
		t.Errorf("--max-memory %s between %d and %d: no word of running in turn:\n%s", budget, c.InTurn, c.Bytes, stderr)
	}
	// Below the in-turn estimate the run is refused.
	if _, _, err := layerCLI(t, runCmd, append(args, "--max-memory", strconv.FormatInt(c.InTurn-1, 10))...); err == nil {
		t.Error("a budget below the in-turn estimate was accepted")
	}
}

// A sweep's points run two at a time side by side when that fits, else two
// at a time in turn, else one at a time (side by side when one fits), and
// give the results of unlimited memory whichever.
func TestSweepRunsPointsAsMemoryAllows(t *testing.T) {
	placementTest(t)
	args := []string{"--ranks", "256", "--tokens", "7,8", "--experts", "2048", "--transport", "mini-gda", "--format", "json"}
	c := layerCost(sweep.Point{Shape: deepseekShape(256, 2048, 8), Mode: moe.LL}, "mini-gda", 0)
	if 2*c.InTurn <= c.Bytes {
		t.Fatalf("two points in turn (%d) fit where one does side by side (%d): pick another shape", 2*c.InTurn, c.Bytes)
	}
	for _, tc := range []struct {
		name         string
		budget       int64
		turn, waited bool
	}{
		{"two side by side", 2 * c.Bytes, false, false},
		{"two in turn", (2*c.InTurn + 2*c.Bytes) / 2, true, false},
		{"one side by side", c.Bytes, false, true},
	} {
		budget := strconv.FormatInt(tc.budget, 10)
		stderr := sameWithin(t, sweepCmd, args, budget, "debug")
		if turn := strings.Contains(stderr, "in turn"); turn != tc.turn {
			t.Errorf("%s, --max-memory %s: in turn %v, want %v:\n%s", tc.name, budget, turn, tc.turn, stderr)
		}
		if waited := strings.Contains(stderr, "point waited for memory"); waited != tc.waited {
			t.Errorf("%s, --max-memory %s: a point waited %v, want %v:\n%s", tc.name, budget, waited, tc.waited, stderr)
		}
	}
}

// A point that could run in turn beside a point like itself, but whose
// neighbour is too large to run beside it, runs alone side by side.
func TestSweepPointBesideALargerOne(t *testing.T) {
	placementTest(t)
	args := []string{"--ranks", "256,512", "--experts", "2048", "--tokens", "8", "--transport", "mini-gda", "--format", "json"}
	cost := func(ranks int) moe.Cost {
		return layerCost(sweep.Point{Shape: deepseekShape(ranks, 2048, 8), Mode: moe.LL}, "mini-gda", 0)
	}
	small, large := cost(256), cost(512)
	// Two small ones fit in turn, not side by side; the large one fits
	// alone side by side, and beside nothing.
	budget := (large.Bytes + 2*small.Bytes) / 2
	if !(2*small.InTurn <= budget && budget < 2*small.Bytes && large.Bytes <= budget && small.InTurn+large.Bytes > budget && budget < 2*large.InTurn) {
		t.Fatalf("estimates %+v and %+v do not make the case at %d: pick other shapes", small, large, budget)
	}
	stderr := sameWithin(t, sweepCmd, args, strconv.FormatInt(budget, 10), "debug")
	if strings.Contains(stderr, "in turn") || !strings.Contains(stderr, "point waited for memory") {
		t.Errorf("--max-memory %d: want both side by side, one after the other:\n%s", budget, stderr)
	}
}

// placementTest runs a sweep placement test in parallel, or skips it
// where it cannot tell anything.
func placementTest(t *testing.T) {
	t.Helper()
	t.Parallel()
	if raceOn {
		t.Skip("placement, not concurrency (TestMemGate runs the gate under the race detector); ten times slower there")
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: a sweep runs one point at a time already")
	}
}

// sameWithin runs cmd on args (JSON) without a memory limit and within
// budget, logging at level, checks that both give the same results, and
// returns the second's log.
func sameWithin(t *testing.T, cmd func([]string, *bytes.Buffer, *bytes.Buffer) error, args []string, budget, level string) string {
	t.Helper()
	want, _, err := layerCLI(t, cmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := layerCLI(t, cmd, append(args, "--max-memory", budget, "--log-level", level)...)
	if err != nil {
		t.Fatalf("--max-memory %s: %v", budget, err)
	}
	if g, w := jsonMember(t, got, "results"), jsonMember(t, want, "results"); g != w {
		t.Errorf("within %s:\n%s\nunlimited:\n%s", budget, g, w)
	}
	return stderr
}

// jsonMember is the raw JSON of a top-level member of doc.
func jsonMember(t *testing.T, doc, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return string(m[name])
}

// layerCost is the estimated cost of one layer of configuration c on a
// mechanism (budget.LayerCost).
func layerCost(c sweep.Point, mechanism string, numSMs int) moe.Cost {
	return budget.LayerCost(c.Shape, c.Mode, mechanism, numSMs, c.Background, c.Knobs)
}
