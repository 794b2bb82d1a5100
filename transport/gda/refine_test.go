package gda

import (
	"encoding/json"
	"os"
	"testing"

	"moebench/profile"
)

// TestRefineImprovesTheH200Fit refines the constants measured on an H200
// host (native/testdata) and checks that the model, run on them, is closer
// to the measured issue times than the direct inversions were.
func TestRefineImprovesTheH200Fit(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../native/testdata/h200-raw.json")
	if err != nil {
		t.Skip("no H200 measurements in native/testdata")
	}
	var m Measured
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	base := profile.MustLoad("p-ib")
	consts, err := FitGPU(m, base)
	if err != nil {
		t.Fatal(err)
	}
	out, before, after, err := Refine(m, base, consts)
	if err != nil {
		t.Fatal(err)
	}
	if after >= before {
		t.Fatalf("refinement did not help: median error %.3f -> %.3f", before, after)
	}
	if after > 0.15 {
		t.Errorf("median issue error after refinement %.1f%%", 100*after)
	}
	f := profile.File{Name: "h200", Constants: out}
	b, _ := json.Marshal(f)
	if _, err := profile.Parse("refined.json", b); err != nil {
		t.Fatalf("refined constants do not form a valid profile fragment: %v", err)
	}
	t.Logf("median issue error %.1f%% -> %.1f%%", 100*before, 100*after)
}
