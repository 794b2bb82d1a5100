package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	readmetext "moebench/internal/readme"
	"moebench/internal/report"
	"moebench/profile"
)

// The README's measured native figures are read back from the committed
// H200 outputs in native/testdata: the README quotes them, never types them.

func readmeFlat(t *testing.T) string {
	t.Helper()
	return readmetext.Flat(readme(t))
}

func wantQuote(t *testing.T, text, what string, format string, args ...any) {
	t.Helper()
	q := readmetext.Flat(fmt.Sprintf(format, args...))
	if !strings.Contains(text, q) {
		t.Errorf("README does not quote %s as\n%s", what, q)
	}
}

// nativePhase and nativeRun are what the README tests read of a native
// run's JSON.
type nativePhase struct {
	Mean float64 `json:"mean_us"`
	Min  float64 `json:"min_us"`
	Max  float64 `json:"max_us"`
	Algo float64 `json:"algo_gbps"`
}

type nativeRun struct {
	Results []struct {
		Preset   string      `json:"preset"`
		Mode     string      `json:"mode"`
		Ranks    int         `json:"ranks"`
		Tokens   int         `json:"tokens"`
		Correct  bool        `json:"correct"`
		Dispatch nativePhase `json:"dispatch"`
		Combine  nativePhase `json:"combine"`
		Model    struct {
			Dispatch nativePhase `json:"dispatch"`
			Combine  nativePhase `json:"combine"`
		} `json:"model"`
	} `json:"results"`
}

func readNativeRun(t *testing.T, path string) nativeRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run nativeRun
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return run
}

func TestREADMEQuotesNativeRun(t *testing.T) {
	t.Parallel()
	const path = "../../native/testdata/h200-layer-run.json"
	run := readNativeRun(t, path)
	text := readmeFlat(t)
	var direct nativePhase
	var dcopy nativePhase
	lo, hi := math.Inf(1), 0.0
	for _, r := range run.Results {
		if !r.Correct {
			t.Errorf("%s: %s did not check out", path, r.Preset)
		}
		wantQuote(t, text, r.Preset+"'s measured row", "| %s | %s–%s | %s–%s | %.2f, %.2f |", r.Preset,
			report.Num(r.Dispatch.Min), report.Num(r.Dispatch.Max), report.Num(r.Combine.Min), report.Num(r.Combine.Max),
			r.Model.Dispatch.Mean/r.Dispatch.Mean, r.Model.Combine.Mean/r.Combine.Mean)
		if r.Preset == "direct" {
			direct, dcopy = r.Dispatch, r.Combine
		}
	}
	for _, r := range run.Results {
		if r.Preset != "direct" {
			for _, x := range []float64{r.Dispatch.Mean / direct.Mean, r.Combine.Mean / dcopy.Mean} {
				lo, hi = min(lo, x), max(hi, x)
			}
		}
	}
	wantQuote(t, text, "the RDMA paths against direct stores", "the RDMA paths take %d–%d times the direct stores", int(lo), int(math.Round(hi)))
}

// textRows reads the first table of a moebench text output: the rows
// under its dashed rule, split on runs of spaces.
func textRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "---"):
			in = true
		case in && strings.TrimSpace(l) == "":
			return rows
		case in:
			rows = append(rows, strings.Fields(l))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestREADMEQuotesNativeMechanisms(t *testing.T) {
	t.Parallel()
	text := readmeFlat(t)
	// ordering preset transport phase mean p50 max issue-done ...
	issue, mean := map[string]string{}, map[string]float64{}
	for _, r := range textRows(t, "../../native/testdata/h200-layer-ordering.txt") {
		issue[r[0]+"/"+r[3]] = r[7]
		mean[r[0]+"/"+r[3]] = num(t, r[4])
	}
	ratio := func(k string) float64 { return num(t, issue["fence-sys/"+k]) / num(t, issue["gpu-fence/"+k]) }
	wantQuote(t, text, "the ordering sweep",
		"dispatch issuing is done at %s µs with fence-sys against %s µs with gpu-fence (%.2f×), combine at %s against %s µs (%.2f×)",
		issue["fence-sys/dispatch"], issue["gpu-fence/dispatch"], ratio("dispatch"), issue["fence-sys/combine"], issue["gpu-fence/combine"], ratio("combine"))
	for _, ph := range []string{"dispatch", "combine"} {
		lo, hi := math.Inf(1), 0.0
		for k, v := range mean {
			if strings.HasSuffix(k, "/"+ph) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if hi/lo > 1.01 {
			t.Errorf("README: the layer time does not move with ordering, but %s spans %.1f–%.1f µs", ph, lo, hi)
		}
	}
	// background preset transport phase mean ... model µs: the measured
	// dispatch with the model's beside it.
	bg := map[string]string{}
	for _, r := range textRows(t, "../../native/testdata/h100-layer-background.txt") {
		if r[3] == "dispatch" && len(r) > 10 {
			bg[r[1]+"/"+r[0]] = r[4] + " µs (" + r[10] + ")"
		}
	}
	for _, p := range []string{"mini-gda", "mini-proxy"} {
		wantQuote(t, text, p+" under background", "| %s | %s | %s |", bg[p+"/none"], bg[p+"/bulk:64:shared"], bg[p+"/bulk:64:reserved"])
	}
}

var gridLine = regexp.MustCompile(`grid \(.*\): (\d+) of (\d+) phase means within 15%, worst ([0-9.]+%)`)
var normalLine = regexp.MustCompile(`normal mode \(.*\): (\d+) phase means, median error ([0-9.]+%), worst ([0-9.]+%)`)
var medianLine = regexp.MustCompile(`(\d+) rows with a measured value: median error ([0-9.]+%)`)
var looLine = regexp.MustCompile(`in sample: \d+ phase means, median error ([0-9.]+%), worst ([0-9.]+%); leaving its configuration out: \d+ phase means, median error ([0-9.]+%), worst ([0-9.]+%)`)
var boundLine = regexp.MustCompile(`on a bound \(.*\): (.*)`)
var boundName = regexp.MustCompile(`([a-z0-9_.]+) \((lower|upper)\)`)

func TestREADMEQuotesLayerCalibration(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../native/testdata/h200-layer-calibrate.txt")
	if err != nil {
		t.Fatal(err)
	}
	g, m := gridLine.FindStringSubmatch(string(b)), medianLine.FindStringSubmatch(string(b))
	if g == nil || m == nil {
		t.Fatal("h200-layer-calibrate.txt lacks the grid or the median line")
	}
	text := readmeFlat(t)
	wantQuote(t, text, "the layer calibration", "puts %s of %s phase means", g[1], g[2])
	wantQuote(t, text, "the layer calibration", "worst %s; over all %s rows the median error is %s", g[3], m[1], m[2])
	nl := normalLine.FindStringSubmatch(string(b))
	if nl == nil {
		t.Fatal("h200-layer-calibrate.txt lacks the normal-mode line")
	}
	wantQuote(t, text, "the normal-mode calibration", "Normal mode's %s phase means come out at a %s median error, worst %s", nl[1], nl[2], nl[3])
	lo, bl := looLine.FindStringSubmatch(string(b)), boundLine.FindStringSubmatch(string(b))
	if lo == nil || bl == nil {
		t.Fatal("h200-layer-calibrate.txt lacks the leave-one-out or the on-a-bound line")
	}
	wantQuote(t, text, "the leave-one-out errors", "median %s and worst %s in sample, %s and %s with its configuration left out", lo[1], lo[2], lo[3], lo[4])
	for _, m := range boundName.FindAllStringSubmatch(bl[1], -1) {
		wantQuote(t, text, "a constant on its bound", "`%s` (%s bound", m[1], m[2])
	}
	// P-IB's kernel-side constants are the fit's, rounded.
	fb, err := os.ReadFile("../../native/testdata/h200-layer.json")
	if err != nil {
		t.Fatal(err)
	}
	var frag profile.File
	if err := json.Unmarshal(fb, &frag); err != nil {
		t.Fatal(err)
	}
	pib := profile.MustLoad("p-ib")
	n := 0
	for _, c := range frag.Constants {
		if !strings.HasPrefix(c.Name, "kernel.") {
			continue
		}
		n++
		if got := pib.Get(c.Name); math.Abs(got-c.Value) > 0.005*c.Value+0.05 {
			t.Errorf("p-ib %s = %v, the H200 fit says %v", c.Name, got, c.Value)
		}
	}
	if n == 0 {
		t.Error("the H200 layer fragment fits no kernel.* constant")
	}
}

// normalRows reads the measured normal-mode sweep: per (ranks, tokens) the
// README's row, and the range of model/measured ratios.
func normalRows(t *testing.T) (rows []string, lo, hi float64) {
	t.Helper()
	const path = "../../native/testdata/h200-layer-normal.json"
	run := readNativeRun(t, path)
	lo, hi = math.Inf(1), 0
	for _, r := range run.Results {
		if !r.Correct || r.Mode != "normal" {
			t.Errorf("%s: %d ranks × %d tokens: mode %q, correct %v", path, r.Ranks, r.Tokens, r.Mode, r.Correct)
		}
		rd, rc := r.Model.Dispatch.Mean/r.Dispatch.Mean, r.Model.Combine.Mean/r.Combine.Mean
		lo, hi = min(lo, rd, rc), max(hi, rd, rc)
		rows = append(rows, fmt.Sprintf("| %d | %d | %s | %s | %s, %s | %.2f, %.2f |", r.Ranks, r.Tokens,
			report.Num(r.Dispatch.Mean), report.Num(r.Combine.Mean), report.Num(r.Dispatch.Algo), report.Num(r.Combine.Algo), rd, rc))
	}
	return rows, lo, hi
}

func TestREADMEQuotesNativeNormal(t *testing.T) {
	t.Parallel()
	rows, lo, hi := normalRows(t)
	if len(rows) != 6 {
		t.Fatalf("%d measured normal-mode rows, want 2, 4, 8 ranks × 1024, 4096 tokens", len(rows))
	}
	text := readmeFlat(t)
	for _, r := range rows {
		wantQuote(t, text, "a measured normal-mode row", "%s", r)
	}
	wantQuote(t, text, "the normal-mode model/measured range", "model over measured %.2f–%.2f", lo, hi)
}

func TestREADMEQuotesNormalChunk(t *testing.T) {
	t.Parallel()
	const path = "../../native/testdata/h200-layer-normal-chunk.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// "chunk 6: direct  direct     dispatch      482 ..."
	line := regexp.MustCompile(`(?m)^chunk (\d+): direct\s+direct\s+dispatch\s+([\d.]+)`)
	us := map[string]float64{}
	for _, m := range line.FindAllStringSubmatch(string(data), -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatal(err)
		}
		us[m[1]] = v
	}
	for _, c := range []string{"1", "6", "16", "64"} {
		if us[c] == 0 {
			t.Fatalf("%s: no dispatch row for chunk %s", path, c)
		}
	}
	text := readmeFlat(t)
	wantQuote(t, text, "the chunk-size runs", "token (`--chunk 1`) makes dispatch %s µs against %s µs at DeepEP's 6 tokens (%.2f×); 16 and 64 tokens give %s and %s µs",
		report.Num(us["1"]), report.Num(us["6"]), us["1"]/us["6"], report.Num(us["16"]), report.Num(us["64"]))
}
