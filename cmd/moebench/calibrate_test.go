package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/native"
	"moebench/native/calib"
	"moebench/native/calib/calibtest"
	"moebench/profile"
	"moebench/transport/gda"
)

func TestCalibratePipeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := calibrateOptions{out: filepath.Join(dir, "cal.json"), raw: filepath.Join(dir, "raw.json"), format: "table", iters: 100}
	m, err := calib.Measure(&calibtest.H200{}, calib.Options{Iters: o.iters, Quick: o.quick}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if m.WQEsVerified != 28 || len(m.IssueNs) != len(native.OrderingModes) || len(m.InlineIssueNs) != len(calib.InlineSizes) {
		t.Fatalf("measured %+v", m)
	}
	// EFA DP Direct posting: every ordering but fenced-dbrec on both
	// doorbell targets, and mlx5 with the same pointer payload beside it.
	if m.EFAWQEsVerified != 33 || len(m.EFAIssueNs) != 6 || len(m.EFAIssueDeviceDoorbellNs) != 6 || len(m.PointerIssueNs) != 6 ||
		m.EFAIssueNs["fence-sys"] != 770 || m.EFAIssueNoDoorbellNs != 119 || m.PointerIssueNs["fence-sys"] != 767 {
		t.Fatalf("EFA measured %v / %v / %v, no doorbell %v", m.EFAIssueNs, m.EFAIssueDeviceDoorbellNs, m.PointerIssueNs, m.EFAIssueNoDoorbellNs)
	}
	var out bytes.Buffer
	if err := finishCalibration(m, nil, o, &out); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(o.out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := profile.Parse(o.out, data)
	if err != nil {
		t.Fatalf("fragment does not parse: %v\n%s", err, data)
	}
	names := map[string]bool{}
	for _, c := range f.Constants {
		names[c.Name] = true
	}
	for _, want := range []string{"gpu.sm_clock_mhz", "gpu.fence_gpu.cycles", "gpu.fence_sys.cycles", "gpu.store_drain.cycles", "gpu.handoff.cycles"} {
		if !names[want] {
			t.Errorf("fragment lacks %s", want)
		}
	}
	raw, err := os.ReadFile(o.raw)
	if err != nil {
		t.Fatal(err)
	}
	var back gda.Measured
	if err := json.Unmarshal(raw, &back); err != nil || back.GPU != "Fake H200" {
		t.Fatalf("raw measurements: %v %+v", err, back.GPU)
	}
	table := out.String()
	for _, want := range []string{"Issue, one thread", "host-mapped doorbell", "slope: 99.0 ns per 16 B", "Posting rate",
		"as DP Direct does (64 B WQE, 32-bit producer-counter doorbell; 33 checked byte for byte)", "Proxy handoff", "CPU worker capacity", "Enclosing kernel", "gpu.fence_gpu.cycles"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestCalibrateJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := calibrateOptions{out: filepath.Join(dir, "cal.json"), format: "json", iters: 100, quick: true}
	m, err := calib.Measure(&calibtest.H200{}, calib.Options{Iters: o.iters, Quick: o.quick}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := finishCalibration(m, nil, o, &out); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Measured  gda.Measured       `json:"measured"`
		Constants []profile.Constant `json:"constants"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Constants) == 0 || v.Measured.SMs != 132 {
		t.Fatalf("json output: %v %+v", err, v)
	}
}

func TestCalibrateFlags(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if err := runCalibrate([]string{"--help"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Examples:") || !strings.Contains(out.String(), "--lib") {
		t.Fatalf("help:\n%s", out.String())
	}
	for _, args := range [][]string{{"--format", "csv"}, {"--iters", "5"}, {"extra"}, {"--bogus"}} {
		if err := runCalibrate(args, &out, &errb); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestCalibrateWithoutLibrary(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	err := runCalibrate([]string{"--lib", filepath.Join(t.TempDir(), "none.so"), "--out", filepath.Join(t.TempDir(), "c.json")}, &out, &errb)
	if !errors.Is(err, native.ErrLibraryNotLoaded) {
		t.Fatalf("err = %v, want ErrLibraryNotLoaded", err)
	}
}
