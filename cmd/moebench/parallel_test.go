package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"moebench/moe"
)

func TestRunIndexedKeepsOrderAndFirstError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		n, jobs int
		fail    []int
		wantErr string
	}{
		{"serial", 7, 1, nil, ""},
		{"parallel", 20, 4, nil, ""},
		{"more jobs than points", 3, 8, nil, ""},
		{"lowest failing index wins", 12, 4, []int{9, 5}, "point 5"},
		{"none", 0, 2, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var done []int
			got, err := runIndexed(tc.n, tc.jobs, func(i int) (int, error) {
				// Later points finish first.
				time.Sleep(time.Duration(tc.n-i) * 100 * time.Microsecond)
				if slices.Contains(tc.fail, i) {
					return 0, fmt.Errorf("point %d", i)
				}
				return i * i, nil
			}, func(i int) { done = append(done, i) })
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.n || len(done) != tc.n {
				t.Fatalf("%d results, %d done calls, want %d", len(got), len(done), tc.n)
			}
			for i, v := range got {
				if v != i*i {
					t.Fatalf("result %d = %d, want %d", i, v, i*i)
				}
			}
		})
	}
}

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

// A layer whose side-by-side estimate exceeds --max-memory but whose
// in-turn estimate fits runs dispatch and combine in turn, says so, and
// gives the same results.
func TestRunInTurnToFitMemory(t *testing.T) {
	t.Parallel()
	args := []string{"--ranks", "64", "--experts", "64", "--transport", "mini-gda", "--format", "json"}
	s := moe.Shape{Experts: 64, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 64, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	c := moe.EstimateCost(s, layerQueues(config{shape: s, mode: moe.LL}, "mini-gda", s.LocalExperts()))
	budget := strconv.FormatInt((c.Bytes+c.InTurn)/2, 10)
	want, _, err := layerCLI(t, runCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := layerCLI(t, runCmd, append(args, "--max-memory", budget, "--log-level", "info")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "dispatch and combine in turn") {
		t.Errorf("--max-memory %s between %d and %d: no word of running in turn:\n%s", budget, c.InTurn, c.Bytes, stderr)
	}
	if g, w := jsonMember(t, got, "results"), jsonMember(t, want, "results"); g != w {
		t.Errorf("in turn:\n%s\nside by side:\n%s", g, w)
	}
	// Below the in-turn estimate the run is refused.
	if _, _, err := layerCLI(t, runCmd, append(args, "--max-memory", strconv.FormatInt(c.InTurn-1, 10))...); err == nil {
		t.Error("a budget below the in-turn estimate was accepted")
	}
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
