package main

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"moebench/fault"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/results"
	"moebench/sim"
	"moebench/sweep"
	"moebench/transport/preset"
)

// failedItem is a run whose dispatch failed as the transport reports it.
func failedItem() sweep.Item {
	f := &fault.Failure{Mechanism: "mini-gda", Rank: 3, Peer: 12, NIC: 0, QP: 5, At: 1234 * sim.Microsecond, Retries: 7,
		Status: "IBV_WC_RETRY_EXC_ERR", Reason: "the last of retry_cnt retransmissions timed out"}
	plan, _ := fault.Parse([]string{"loss:0.01"}, 4)
	r := &moe.Result{Transport: "mini-gda", Mode: moe.LL, Faults: plan, Correct: true, RouteHash: "x",
		Shape: moe.Shape{Ranks: 16, GPUsPerNode: 8, Experts: 64, TopK: 8, Hidden: 1024, Tokens: 8}}
	r.Dispatch.Failure = f
	r.Combine.Failure = &fault.Failure{Mechanism: "mini-gda", Rank: 1, Peer: 2, QP: 9, At: 5 * sim.Microsecond, Status: "IBV_WC_RETRY_EXC_ERR", Reason: "lost"}
	r.Dispatch.BoundBy, r.Combine.BoundBy = "wire", "egress"
	return sweep.Item{Preset: preset.Preset{Name: "mini-gda", Mechanism: "mini-gda"}, Result: r}
}

// A failed phase's row says failed, a line under the tables and one on
// stderr give the failure's text (queue, rank, when, completion status),
// the JSON holds it as an object, and the command's status stays 0.
func TestFailedLayerSaysWhereAndWhy(t *testing.T) {
	t.Parallel()
	items := []sweep.Item{failedItem()}
	var text bytes.Buffer
	if err := results.Render(&text, "table", sweep.Doc(report.Header{}, "", items)); err != nil {
		t.Fatal(err)
	}
	var dispatchRow, combineRow string
	for _, l := range strings.Split(text.String(), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[0] == "mini-gda" && f[2] == "dispatch" {
			dispatchRow = l
		}
		if len(f) > 3 && f[0] == "mini-gda" && f[2] == "combine" {
			combineRow = l
		}
	}
	if !strings.HasSuffix(dispatchRow, " failed") || !strings.HasSuffix(combineRow, " failed") {
		t.Errorf("rows:\n%s\n%s\nwant both bound by failed", dispatchRow, combineRow)
	}
	for _, want := range []string{
		"! mini-gda: dispatch failed under faults loss:0.01@host,loss:0.01@spine:",
		"rank 3's queue 5 on NIC 0 to rank 12 failed at 1.234ms with IBV_WC_RETRY_EXC_ERR after 7 retransmissions",
		"! mini-gda: combine failed under faults loss:0.01@host,loss:0.01@spine: mini-gda: rank 1's queue 9",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var csvOut bytes.Buffer
	if err := results.Render(&csvOut, "csv", sweep.Doc(report.Header{}, "", items)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(csvOut.String(), ",failed,"); n != 2 {
		t.Errorf("CSV: %d phases bound by failed, want 2:\n%s", n, csvOut.String())
	}
	var js bytes.Buffer
	if err := results.Render(&js, "json", sweep.Doc(report.Header{}, "", items)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			Faults    string          `json:"faults"`
			FaultSeed uint64          `json:"fault_seed"`
			Failure   results.Failure `json:"failure"`
			Combine   struct {
				Failure results.Failure `json:"failure"`
			} `json:"combine"`
		} `json:"results"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Results[0]
	want := results.Failure{Phase: "dispatch", Mechanism: "mini-gda", Rank: 3, Peer: 12, QP: 5, AtUs: 1234, Retries: 7, Status: "IBV_WC_RETRY_EXC_ERR",
		Reason: "the last of retry_cnt retransmissions timed out", Message: items[0].Result.Dispatch.Failure.Error()}
	if got.Faults != "loss:0.01@host,loss:0.01@spine" || got.FaultSeed != 4 || got.Failure != want {
		t.Errorf("JSON: %+v\nwant faults loss:0.01 on both classes, seed 4, failure %+v", got, want)
	}
	if c := got.Combine.Failure; c.Phase != "combine" || c.Rank != 1 || c.QP != 9 || c.AtUs != 5 {
		t.Errorf("JSON: combine's failure %+v, want rank 1's queue 9 at 5 µs", c)
	}
	var errb bytes.Buffer
	warnFailed(&errb, "run", items)
	if s := errb.String(); strings.Count(s, "\n") != 2 || !strings.Contains(s, "moebench run: preset mini-gda: the layer failed under its faults") || !strings.Contains(s, "IBV_WC_RETRY_EXC_ERR") {
		t.Errorf("stderr: %q", s)
	}
}

// sweep --seeds under a slow rank, which draws nothing at random: every
// seed is the same run, so the tails over seeds are run's own figures
// for that fault (its slowest rank's time per phase, and their sum).
func TestSweepSeedsOfADeterministicFaultAreTheRun(t *testing.T) {
	t.Parallel()
	args := []string{"--ranks", "16", "--tokens", "16", "--hidden", "2048", "--transport", "mini-gda,mini-proxy", "--fault", "slow:5:2", "--format", "json"}
	var out, errb bytes.Buffer
	if err := runRun(args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var runDoc struct {
		Results []struct {
			Preset   string `json:"preset"`
			Faults   string `json:"faults"`
			Dispatch struct {
				Max float64 `json:"max_us"`
			} `json:"dispatch"`
			Combine struct {
				Max float64 `json:"max_us"`
			} `json:"combine"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out.Bytes(), &runDoc); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runSweep(append(args, "--seeds", "3"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	var sw struct {
		Tails []results.TailRow `json:"tails"`
	}
	if err := json.Unmarshal(out.Bytes(), &sw); err != nil {
		t.Fatal(err)
	}
	if len(sw.Tails) != 2 || len(runDoc.Results) != 2 {
		t.Fatalf("%d tails, %d runs, want 2 each", len(sw.Tails), len(runDoc.Results))
	}
	for i, tr := range sw.Tails {
		r := runDoc.Results[i]
		if tr.Preset != r.Preset || tr.Faults != "slow:5:2" || r.Faults != "slow:5:2" {
			t.Errorf("tail %d: %s under %q, run %s under %q", i, tr.Preset, tr.Faults, r.Preset, r.Faults)
		}
		for _, c := range []struct {
			what string
			t    results.Tail
			want float64
		}{{"dispatch", tr.Dispatch, r.Dispatch.Max}, {"combine", tr.Combine, r.Combine.Max}, {"layer", tr.Layer, r.Dispatch.Max + r.Combine.Max}} {
			if c.t.Seeds != 3 || c.t.Failed != 0 || math.Abs(c.t.P50Us-c.want) > 1e-9 || math.Abs(c.t.P99Us-c.want) > 1e-9 || math.Abs(c.t.MaxUs-c.want) > 1e-9 {
				t.Errorf("%s %s: %+v, want 3 seeds at %v µs", tr.Preset, c.what, c.t, c.want)
			}
		}
	}
}

// The tails' figure: per preset a p50 and a p99 series of the layer time
// over the loss rates, in the order swept; a point whose every seed
// failed is left out.
func TestTailsFigure(t *testing.T) {
	t.Parallel()
	mk := func(ps string, point int, loss string, seed uint64, d, c float64, failed bool) sweep.Item {
		r := &moe.Result{Mode: moe.LL}
		r.Dispatch.Time.Max, r.Combine.Time.Max = d, c
		if failed {
			r.Combine.Failure = &fault.Failure{Status: "IBV_WC_RETRY_EXC_ERR"}
		}
		return sweep.Item{Point: sweep.Point{Fault: sweep.Fault{Point: point, Seeds: 2, Seed: seed, Loss: loss}}, Preset: preset.Preset{Name: ps, Mechanism: ps},
			Result: r, Swept: []results.Knob{{Name: "loss", Value: loss}}}
	}
	items := []sweep.Item{
		mk("a", 0, "0", 1, 10, 20, false), mk("a", 0, "0", 2, 10, 20, false),
		mk("b", 0, "0", 1, 12, 20, false), mk("b", 0, "0", 2, 12, 20, false),
		mk("a", 1, "1e-05", 1, 10, 20, false), mk("a", 1, "1e-05", 2, 10, 120, false),
		mk("b", 1, "1e-05", 1, 12, 20, true), mk("b", 1, "1e-05", 2, 12, 20, true),
	}
	fig := sweep.Doc(report.Header{}, "", items).Figure()
	pn := fig.Panels[0]
	if pn.XLabel != "packet loss per link crossing" || strings.Join(pn.XCategories, " ") != "0 1e-05" {
		t.Fatalf("x: %q over %v", pn.XLabel, pn.XCategories)
	}
	want := map[string][]float64{
		"a p50": {30, 30 + 50}, // seeds 30 and 130 µs: p50 80, p99 129
		"a p99": {30, 30 + 99},
		"b p50": {32}, // every seed at 1e-5 failed
		"b p99": {32},
	}
	if len(pn.Series) != len(want) {
		t.Fatalf("%d series, want %d", len(pn.Series), len(want))
	}
	for _, s := range pn.Series {
		w := want[s.Name]
		if len(s.Y) != len(w) {
			t.Errorf("%s: %v, want %v", s.Name, s.Y, w)
			continue
		}
		for i := range w {
			if math.Abs(s.Y[i]-w[i]) > 1e-9 || s.X[i] != float64(i) {
				t.Errorf("%s: point %d at (%v, %v), want (%d, %v)", s.Name, i, s.X[i], s.Y[i], i, w[i])
			}
		}
	}
}

// replay under a slow rank: with twice the kernel time its reduction
// ends last, so every layer's combine names it as the slowest rank;
// without the fault no single rank does.
func TestReplayNamesTheSlowRank(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := genTrace(t, dir, "t.bin", "--routing", "uniform", "--ranks", "16", "--experts", "64", "--tokens", "32", "--layers", "4")
	slowest := func(args ...string) []int {
		out, err := replayCLI(t, append([]string{"--trace", path, "--transport", "mini-gda", "--hidden", "2048", "--format", "json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Layers []struct {
				Slowest struct {
					Combine struct {
						Rank int `json:"rank"`
					} `json:"combine"`
				} `json:"slowest_rank"`
			} `json:"layers"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		var r []int
		for _, l := range doc.Layers {
			r = append(r, l.Slowest.Combine.Rank)
		}
		return r
	}
	for i, r := range slowest("--fault", "slow:5:2") {
		if r != 5 {
			t.Errorf("layer %d: combine's slowest rank is %d, want the slow rank 5", i, r)
		}
	}
	healthy := slowest()
	all5 := true
	for _, r := range healthy {
		all5 = all5 && r == 5
	}
	if all5 {
		t.Errorf("healthy, rank 5 is already the slowest in every layer (%v): the test cannot tell", healthy)
	}
	out, err := replayCLI(t, "--trace", path, "--transport", "mini-gda", "--hidden", "2048", "--fault", "slow:5:2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "# faults slow:5:2; fault seed 1") {
		t.Errorf("the header does not name the faults:\n%s", out)
	}
}

// replay under heavy loss: a layer whose queue gives up says so in its
// row (bound by failed), in its JSON (failure, with the completion
// status) and on stderr, and the replay goes on to the next layer.
func TestReplayFailedLayersSaySo(t *testing.T) {
	t.Parallel()
	path := genTrace(t, t.TempDir(), "t.bin", "--routing", "uniform", "--ranks", "16", "--experts", "64", "--tokens", "8", "--layers", "2")
	args := []string{"--trace", path, "--transport", "mini-gda", "--hidden", "1024", "--fault", "loss:0.3"}
	var out, errb bytes.Buffer
	if err := runReplay(args, &out, &errb); err != nil {
		t.Fatal(err)
	}
	rows := linesOf(out.String(), func(l string) bool { return strings.HasPrefix(l, "   0  ") })
	failed := 0
	for _, r := range rows {
		if strings.Contains(r, " failed ") {
			failed++
		}
	}
	if len(rows) != 4 || failed == 0 {
		t.Fatalf("%d rows, %d failed, want 4 rows with a failure among them:\n%s", len(rows), failed, out.String())
	}
	if n := strings.Count(errb.String(), "failed under its faults"); n != failed {
		t.Errorf("stderr tells of %d failures, the table of %d:\n%s", n, failed, errb.String())
	}
	out.Reset()
	if err := runReplay(append(args, "--format", "json"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Layers []struct {
			Faults  string           `json:"faults"`
			Failure *results.Failure `json:"failure"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	withFailure := 0
	for _, l := range doc.Layers {
		if l.Faults != "loss:0.3@host,loss:0.3@spine" {
			t.Errorf("layer faults %q", l.Faults)
		}
		if l.Failure != nil {
			withFailure++
			if l.Failure.Status != "IBV_WC_RETRY_EXC_ERR" || l.Failure.Retries != 7 {
				t.Errorf("failure %+v, want IBV_WC_RETRY_EXC_ERR after the 7 retries of nic.retry_cnt", l.Failure)
			}
		}
	}
	if withFailure == 0 {
		t.Error("no layer's JSON holds its failure")
	}
}
