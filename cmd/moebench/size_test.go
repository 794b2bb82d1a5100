package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/results"
	"moebench/sizing"
	"moebench/sweep"
	"moebench/transport"
)

// readmeSize is the sizing study README.md shows, with its plot.
var readmeSize = []string{"size", "--ranks", "32", "--tokens", "32", "--proxy-cores", "2", "--max-buffer-gib", "0.46"}

// The README's study: its table and the plot it shows must not drift.
func TestSizeREADME(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("re-checks figures only; TestSizeFormats runs the same code under the race detector")
	}
	plotPath := filepath.Join(t.TempDir(), "size-front.svg")
	out, _, err := runCLI(t, append(readmeSize, "--plot", plotPath, "--no-payload-check")...)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "size_readme.txt", stripHeader(out))
	got, err := os.ReadFile(plotPath)
	if err != nil {
		t.Fatal(err)
	}
	checked := filepath.Join("..", "..", "docs", "size-front.svg")
	if *update {
		if err := os.WriteFile(checked, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(checked)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Fatalf("docs/size-front.svg differs from what moebench %s draws (go test -update rewrites it after review)", strings.Join(readmeSize, " "))
	}
}

func TestSizeFormats(t *testing.T) {
	t.Parallel()
	args := []string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--workers", "1,2", "--no-payload-check"}
	js, _, err := runCLI(t, append(args, "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc results.Size
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Result == nil || doc.Recommended < 0 || len(doc.Front) == 0 || len(doc.Reasons) == 0 || doc.Header.Command != "size" {
		t.Fatalf("JSON lacks the study: %+v", doc.Result)
	}
	cs, _, err := runCLI(t, append(args, "--format", "csv")...)
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(cs, "\n") {
		if !strings.HasPrefix(l, "# ") {
			body = append(body, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(body, "\n"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(doc.Candidates)+1 || recs[0][1] != "candidate" {
		t.Fatalf("CSV has %d records for %d candidates: %v", len(recs), len(doc.Candidates), recs[0])
	}
	verdicts := map[string]int{}
	for _, r := range recs[1:] {
		verdicts[r[10]]++
	}
	if verdicts[sizing.Recommended] != 1 {
		t.Fatalf("verdicts %v", verdicts)
	}
	tab, _, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Recommended: ", "Why not the others:", "candidate  ", "layer µs", "dispatch p99", "proxy cores/host"} {
		if !strings.Contains(tab, w) {
			t.Errorf("the table lacks %q", w)
		}
	}
}

func TestSizeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"size", "--tolerance", "2"}, "--tolerance", true},
		{[]string{"size", "--max-buffer-gib", "-1"}, "--max-buffer-gib", true},
		{[]string{"size", "--proxy-cores", "-2"}, "--proxy-cores", true},
		{[]string{"size", "--dcis", "0"}, "--dcis 0", true},
		{[]string{"size", "--mode", "fast"}, "--mode", true},
		{[]string{"size", "--ranks", "12"}, "--ranks", true},
		{[]string{"size", "--background", "bulk:x"}, "--background", true},
		{[]string{"size", "extra"}, "takes no arguments", true},
		// Every candidate over the target: the table is written, and the
		// command fails as on bad data.
		{[]string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "4", "--target-us", "1", "--transport", "mini-gda"}, "no candidate meets the limits", false},
	} {
		_, _, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(message(err), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("%v: %v, want an error containing %q (usage %v)", tc.args, err, tc.want, tc.usage)
		}
	}
}

// Background traffic without a queue policy tries both.
func TestSizeTriesSharedAndReservedQueues(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("no concurrency of its own; the race detector covers size's parallel runs in TestSizeFormats")
	}
	out, _, err := runCLI(t, "size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "4", "--transport", "mini-gda",
		"--qps-per-peer", "1", "--background", "bulk:2", "--format", "json", "--no-payload-check")
	if err != nil {
		t.Fatal(err)
	}
	var doc results.Size
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range doc.Candidates {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "mini-gda qps=1 shared,mini-gda qps=1 +1 reserved" {
		t.Fatalf("candidates %v", names)
	}
	// One QP per peer for the layer, as asked, and one reserved: twice the
	// shared candidate's.
	if r := doc.Candidates[1].Resources; r.QPsPerNIC != 2*doc.Candidates[0].Resources.QPsPerNIC {
		t.Errorf("reserved queues hold %d QPs, want twice the shared ones' %d", r.QPsPerNIC, doc.Candidates[0].Resources.QPsPerNIC)
	}
}

// README.md quotes the golden study: its command, and lines of its output.
func TestREADMEQuotesTheSizeStudy(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	cmd := "moebench " + strings.Join(readmeSize, " ") + " --plot docs/size-front.svg"
	if !strings.Contains(readme, cmd) {
		t.Errorf("README.md does not show %q", cmd)
	}
	gold, err := os.ReadFile(filepath.Join("testdata", "size_readme.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(gold), "\n") {
		lines[l] = true
	}
	i := strings.Index(readme, "\ncandidate                verdict")
	if i < 0 {
		t.Fatal("README.md shows no sizing table")
	}
	block := readme[i+1:]
	block = block[:strings.Index(block, "```")]
	for _, l := range strings.Split(block, "\n") {
		if s := strings.TrimSpace(l); s != "" && s != "..." && !lines[l] {
			t.Errorf("README.md quotes a line the study does not print (go test -update, then copy it):\n%s", l)
		}
	}
}

// A study whose candidates fit only with dispatch and combine in turn runs
// them so, says so, and sizes as it does side by side.
func TestSizeInTurnToFitMemory(t *testing.T) {
	t.Parallel()
	// In turn saves memory from a few hundred ranks (moe.EstimateCost).
	args := []string{"size", "--ranks", "256", "--experts", "2048", "--tokens", "8", "--transport", "mini-gda", "--qps-per-peer", "1,2", "--jobs", "1", "--format", "json"}
	budget := layerCost(sweep.Point{Shape: deepseekShape(256, 2048, 8), Mode: moe.LL, Knobs: transport.Settings{"qps-per-peer": "2"}}, "mini-gda", 0).InTurn
	study := func(extra ...string) (results.Size, string) {
		t.Helper()
		out, stderr, err := runCLI(t, append(args, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		var doc results.Size
		if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Result == nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return doc, stderr
	}
	want, _ := study()
	got, stderr := study("--max-memory", strconv.FormatInt(budget, 10), "--log-level", "info")
	if !strings.Contains(stderr, "dispatch and combine in turn") {
		t.Errorf("--max-memory %d: no word of running in turn:\n%s", budget, stderr)
	}
	if len(got.Candidates) != len(want.Candidates) || got.Recommended != want.Recommended {
		t.Fatalf("in turn: %d candidates, recommended %d; side by side %d, %d", len(got.Candidates), got.Recommended, len(want.Candidates), want.Recommended)
	}
	modelled := 0
	for i, c := range got.Candidates {
		if c.Figures != nil {
			modelled++
		}
		w := want.Candidates[i]
		if c.Name != w.Name || (c.Figures == nil) != (w.Figures == nil) || c.Figures != nil && *c.Figures != *w.Figures {
			t.Errorf("candidate %d: %s %+v in turn, %s %+v side by side", i, c.Name, c.Figures, w.Name, w.Figures)
		}
	}
	if modelled == 0 {
		t.Fatal("no candidate was modelled")
	}
}

// A study is checked against the mechanisms it considers only: one of
// mini-gda alone that fits side by side runs so, though mini-proxy's
// candidates would not fit.
func TestSizeEstimatesItsOwnMechanisms(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("one job, one 256-rank model run: nothing for the race detector")
	}
	cost := func(m string) moe.Cost {
		return layerCost(sweep.Point{Shape: deepseekShape(256, 2048, 8), Mode: moe.LL, Knobs: transport.Settings{"qps-per-peer": "1"}}, m, 0)
	}
	gda, proxy := cost("mini-gda"), cost("mini-proxy")
	if proxy.Bytes <= gda.Bytes {
		t.Fatalf("mini-proxy's estimate %d is not above mini-gda's %d: pick another shape", proxy.Bytes, gda.Bytes)
	}
	budget := strconv.FormatInt(gda.Bytes, 10)
	_, stderr, err := runCLI(t, "size", "--ranks", "256", "--experts", "2048", "--tokens", "8", "--transport", "mini-gda",
		"--qps-per-peer", "1", "--jobs", "1", "--no-payload-check", "--max-memory", budget, "--log-level", "info")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "in turn") {
		t.Errorf("--max-memory %s, mini-gda's estimate: ran in turn, for mini-proxy's %d?\n%s", budget, proxy.Bytes, stderr)
	}
}

// A study whose largest candidate fits the budget alone but not one per
// core runs fewer at once when --jobs is left to its default, and says so;
// an explicit --jobs is kept, and the study refused, naming it.
func TestSizeJobsComeDownToFitMemory(t *testing.T) {
	t.Parallel()
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("one core: a study runs one candidate at a time already")
	}
	args := []string{"size", "--ranks", "16", "--tokens", "8", "--qps-per-peer", "1,2", "--dcis", "4", "--workers", "1", "--no-payload-check"}
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 8, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	// The largest candidate fits side by side; two at once do not, even
	// in turn.
	var most, turn int64
	all, err := resolvePresets([]string{"all"}, nil, false, profile.MustLoad("p-ib"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sizing.LargestCosts(s, moe.LL, all, map[string][]int{"qps-per-peer": {1, 2}, "dcis": {4}}) {
		most, turn = max(most, c.Bytes), max(turn, c.InTurn)
	}
	if 2*turn <= most {
		t.Fatalf("two candidates in turn (%d) fit where one does side by side (%d): pick another shape", 2*turn, most)
	}
	budget := strconv.FormatInt(most, 10)
	_, stderr, err := runCLI(t, append(args, "--max-memory", budget, "--log-level", "info")...)
	if err != nil {
		t.Fatalf("--max-memory %s (largest candidate %d): %v", budget, most, err)
	}
	if !strings.Contains(stderr, "fewer candidates at once") || !strings.Contains(stderr, `"jobs": 1`) {
		t.Errorf("--max-memory %s: no word of running one candidate at a time:\n%s", budget, stderr)
	}
	_, _, err = runCLI(t, append(args, "--max-memory", budget, "--jobs", "2")...)
	if err == nil || !strings.Contains(err.Error(), "--jobs") {
		t.Errorf("--jobs 2 within %s: %v, want a refusal naming --jobs", budget, err)
	}
}
