package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"moebench/published"
	"moebench/results"
)

const exampleRuns = "../../published/testdata/deepep-h800.json"

// validate --against deepep --measured prints each figure of the file
// beside what moebench run models for its conditions, that run's binding
// cause, and DeepEP's published figure where the suite has the same
// conditions; the committed example is DeepEP's figures, so each has one.
func TestValidateRunsExample(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("single-goroutine models: nothing for the race detector")
	}
	data, err := os.ReadFile(exampleRuns)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := published.ParseRuns(exampleRuns, data)
	if err != nil {
		t.Fatal(err)
	}
	recs := csvRows(t, "validate", "--against", "deepep", "--measured", exampleRuns, "--format", "csv")
	if len(recs) != len(runs.Rows) {
		t.Fatalf("%d rows, want the file's %d figures", len(recs), len(runs.Rows))
	}
	modelled := map[string]results.Run{}
	for i, r := range runs.Rows {
		rec := recs[i]
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(rec[k], 64)
			if err != nil {
				t.Fatalf("row %d: %s %q: %v", i, k, rec[k], err)
			}
			return v
		}
		if rec["experiment"] != r.Experiment || rec["case"] != r.Case || rec["metric"] != r.Phase+" "+r.Metric || rec["unit"] != r.Unit() {
			t.Errorf("row %d: %v, want %s %s %s %s", i, rec, r.Experiment, r.Case, r.Phase, r.Metric)
		}
		if num("measured") != r.Value || num("deepep") != r.Value {
			t.Errorf("row %d: measured %s, deepep %s, want both %v", i, rec["measured"], rec["deepep"], r.Value)
		}
		// The model's figure is the run's, of the metric and phase named.
		key := strings.Join(r.Args(), " ")
		res, ok := modelled[key]
		if !ok {
			if res, err = runJSON(append(r.Args(), "--profile", published.Profile, "--format", "json", "--progress=false")); err != nil {
				t.Fatal(err)
			}
			modelled[key] = res
		}
		ph := res.Dispatch
		if r.Phase == "combine" {
			ph = res.Combine
		}
		want := map[string]float64{published.MeanUs: ph.MeanUs, published.DeepEPGBps: ph.DeepEPGBps, published.NVLinkGBps: ph.NVLinkGBps}[r.Metric]
		if m := num("model"); math.Abs(m-want) > 1e-5*want {
			t.Errorf("row %d: model %v, moebench run gives %v", i, m, want)
		}
		if e, want := num("rel_err"), math.Abs(want-r.Value)/r.Value; math.Abs(e-want) > 1e-5 {
			t.Errorf("row %d: rel_err %v, want %v", i, e, want)
		}
		if rec["bound_by"] == "" || rec["bound_by"] != ph.BoundBy {
			t.Errorf("row %d: bound by %q, the run says %q", i, rec["bound_by"], ph.BoundBy)
		}
	}
	out, _, err := runCLI(t, "validate", "--against", "deepep", "--measured", exampleRuns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`# measured on "` + runs.Platform + `"`, "bound_by", "deepep",
		"\n" + strconv.Itoa(len(runs.Rows)) + " rows with a measured value: median error "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A run of conditions DeepEP did not publish has no published figure;
// --fail-above fails as the suite's does; another profile is honoured; a
// file of runs given where a calibration belongs is refused as misuse.
func TestValidateRunsUnpublished(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("single-goroutine models: nothing for the race detector")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "runs.csv")
	const runs = "mode,ranks,gpus_per_node,experts,topk,hidden,tokens,nvlink,dispatch_dtype,dispatch_us\n" +
		"ll,16,8,288,8,7168,64,false,bf16,1\n"
	if err := os.WriteFile(path, []byte(runs), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "validate", "--against", "deepep", "--measured", path, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(doc.Rows))
	}
	if v, ok := doc.Rows[0]["deepep"]; !ok || v != nil {
		t.Errorf("deepep %v (present %v), want null", v, ok)
	}
	if doc.Rows[0]["source"] != path+":2" || doc.Rows[0]["case"] != "EP16 (line 2)" {
		t.Errorf("source %v, case %v", doc.Rows[0]["source"], doc.Rows[0]["case"])
	}
	// A microsecond is far from any model of this layer.
	o := filepath.Join(dir, "v.csv")
	if _, _, err := runCLI(t, "validate", "--against", "deepep", "--measured", path, "--fail-above", "0.5", "--out", o); err == nil || !strings.Contains(err.Error(), "--fail-above") {
		t.Errorf("error %v, want one naming --fail-above", err)
	}
	if _, err := os.Stat(o); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--out written despite --fail-above: %v", err)
	}
	out, _, err = runCLI(t, "validate", "--against", "deepep", "--measured", path, "--profile", "p-ib", "--format", "csv")
	if err != nil || !strings.Contains(out, "# profile p-ib") {
		t.Errorf("--profile p-ib: %v\n%s", err, out)
	}
	for _, against := range []string{"auto", "measured"} {
		_, _, err := runCLI(t, "validate", "--against", against, "--measured", path)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--against deepep") {
			t.Errorf("--against %s: %v, want a usage error pointing at --against deepep", against, err)
		}
	}
}

// validate --help documents every key of a runs file.
func TestValidateHelpNamesEveryRunKey(t *testing.T) {
	t.Parallel()
	help, _, err := runCLI(t, "validate", "--help")
	if err != nil {
		t.Fatal(err)
	}
	_, format, ok := strings.Cut(help, "\n--measured FILE is")
	if !ok {
		t.Fatalf("validate --help does not describe --measured's files:\n%s", help)
	}
	for _, k := range published.RunKeys() {
		if !regexp.MustCompile(`\b` + k + `\b`).MatchString(format) {
			t.Errorf("validate --help does not name %s", k)
		}
	}
}
