package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	nativelayer "moebench/native/layer"
	"moebench/profile"
)

// calibrate --layer --from-raw reports each fitted constant with its
// bounds and whether it ends on one, every run's error in sample and with
// its configuration left out, and writes the constants as a bounded fit's.
func TestCalibrateLayerReportsBoundsAndLeaveOneOut(t *testing.T) {
	if testing.Short() || raceOn {
		t.Skip("fits the model through a few runs: seconds of single-goroutine models")
	}
	t.Parallel()
	grid := []nativelayer.GridPoint{
		{Transport: "direct", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 4, Tokens: 16, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 2, Tokens: 16, Hidden: 2048, TopK: 4, Experts: 16},
	}
	raw, err := nativelayer.Measure(&fakeLib{}, grid, nativelayer.Options{Reps: 1, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rawPath, fragPath := filepath.Join(dir, "raw.json"), filepath.Join(dir, "frag.json")
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rawPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "calibrate", "--layer", "--from-raw", rawPath, "--base", "p-ib", "--out", fragPath, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Constants []profile.Constant `json:"constants"`
		Bounds    []struct {
			Name         string  `json:"name"`
			Value        float64 `json:"value"`
			Lower, Upper float64
			At           string `json:"on_bound"`
			Source       string `json:"bounds_source"`
		} `json:"bounds"`
		LeaveOneOut []struct {
			Case     string  `json:"case"`
			Metric   string  `json:"metric"`
			InSample float64 `json:"in_sample_error"`
			LeftOut  float64 `json:"left_out_error"`
		} `json:"leave_one_out"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(v.Bounds) != len(v.Constants) || len(v.Bounds) == 0 {
		t.Fatalf("%d constants, %d with bounds", len(v.Constants), len(v.Bounds))
	}
	for _, c := range v.Bounds {
		if c.Source == "" || !(c.Lower > 0 && c.Lower < c.Upper) || c.Value < c.Lower*0.999 || c.Value > c.Upper*1.001 {
			t.Errorf("%s = %v in [%v, %v] (%q)", c.Name, c.Value, c.Lower, c.Upper, c.Source)
		}
		if (c.At == "lower") != (c.Value <= c.Lower*1.001) {
			t.Errorf("%s = %v, lower bound %v, on bound %q", c.Name, c.Value, c.Lower, c.At)
		}
	}
	if len(v.LeaveOneOut) != 2*len(grid) {
		t.Errorf("%d leave-one-out rows for %d runs", len(v.LeaveOneOut), len(grid))
	}
	frag, err := os.ReadFile(fragPath)
	if err != nil {
		t.Fatal(err)
	}
	var f profile.File
	if err := json.Unmarshal(frag, &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Constants {
		if !strings.HasPrefix(c.Source, "bounded fit: ") {
			t.Errorf("%s: source %q", c.Name, c.Source)
		}
	}
	table, _, err := runCLI(t, "calibrate", "--layer", "--from-raw", rawPath, "--base", "p-ib", "--out", filepath.Join(dir, "frag2.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"on bound", "left out", "leaving its configuration out: 6 phase means", "Bounds:"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
}
