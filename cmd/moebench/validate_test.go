package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestValidateJSONHasExactlyTheRowKeys(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "validate", "--only", "single-op,ordering,inline,rate,completion-scope", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) < 35 {
		t.Fatalf("%d rows", len(doc.Rows))
	}
	want := []string{"case", "experiment", "metric", "model", "paper", "rel_err", "unit"}
	for _, r := range doc.Rows {
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("row keys %v, want %v", keys, want)
		}
	}
}

func TestValidateTableAndCSV(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "validate", "--only", "ordering")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# moebench", "profile p-ib", "host ", "fence-sys", "14 rows with a paper value"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, "validate", "--only", "ordering", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nexperiment,case,metric,unit,paper,model,rel_err\nordering,none,issue,µs,0.19,") {
		t.Errorf("CSV output:\n%s", out)
	}
}

func TestBadInputFailsClearlyAndWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outFile := filepath.Join(dir, "rows.json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate", "--only", "nope"}, `unknown experiment "nope"`},
		{[]string{"validate", "--set", "gpu.sm_clock=3"}, `--set gpu.sm_clock=3: unknown constant "gpu.sm_clock"`},
		{[]string{"validate", "--set", "gpu.sms=0"}, "out of range [1, 1024]"},
		{[]string{"validate", "--format", "yaml"}, `--format "yaml"`},
		{[]string{"validate", "--profile", "p-mars"}, `no such built-in profile`},
		{[]string{"validate", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"mech", "rate", "--style", "fast"}, `--style "fast"`},
		{[]string{"mech", "single", "--payload", "0"}, "--payload: 0 B"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		args := append(tc.args, "--out", outFile)
		if tc.args[0] == "frobnicate" {
			args = tc.args
		}
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(message(err), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if exitCode(err) != 2 {
			t.Errorf("%v: exit code %d, want 2 for a usage error", tc.args, exitCode(err))
		}
		if _, statErr := os.Stat(outFile); statErr == nil {
			t.Fatalf("%v left %s behind", tc.args, outFile)
		}
	}
}

func TestOutWritesTheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "v.csv")
	stdout, _, err := runCLI(t, "validate", "--only", "completion-scope", "--format", "csv", "--out", path)
	if err != nil || stdout != "" {
		t.Fatalf("err %v, stdout %q", err, stdout)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "completion-scope,") {
		t.Fatalf("file:\n%s", b)
	}
}

func TestHelpIsNotAnError(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"validate", "mech", "profile", "trace"} {
		stdout, stderr, err := runCLI(t, c, "--help")
		if err != nil || !strings.Contains(stdout+stderr, "Usage: moebench") {
			t.Errorf("%s --help: %v\n%s", c, err, stderr)
		}
	}
}

func TestMechSweepSkipsImpossibleCombinations(t *testing.T) {
	t.Parallel()
	out, stderr, err := runCLI(t, "mech", "rate", "--threads", "1,16", "--qps", "1,16", "--per-doorbell", "16", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "skipping 1 threads, 16 QPs") || strings.Count(out, "\nrate,") != 3 {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", out, stderr)
	}
}

func TestValidateAgainstLocalMeasurements(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "validate", "--profile", "p-ib,../../native/testdata/h200-calibration.json",
		"--measured", "../../native/testdata/h200-raw.json", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"experiment,case,metric,unit,measured,model,rel_err", "ordering,gpu-fence,issue,µs,0.54", "NVIDIA H200"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runCLI(t, "validate", "--measured", "validate_test.go"); err == nil {
		t.Error("a file that is not calibrate's raw JSON must be rejected")
	}
}

func TestValidateUsesTheCalibrationInTheProfile(t *testing.T) {
	t.Parallel()
	out, _, err := runCLI(t, "validate", "--profile", "p-ib,../../native/testdata/h200-calibration.json", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, ",measured,model,") || !strings.Contains(out, "NVIDIA H200") {
		t.Fatalf("a profile carrying a calibration should be validated against it:\n%s", out)
	}
	out, _, err = runCLI(t, "validate", "--profile", "p-ib,../../native/testdata/h200-calibration.json", "--against", "paper", "--only", "ordering", "--format", "csv")
	if err != nil || !strings.Contains(out, ",paper,model,") {
		t.Fatalf("--against paper: %v\n%s", err, out)
	}
}
