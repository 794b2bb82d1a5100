package calib

import (
	"errors"
	"os"
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/profile"
)

// A measurement file reads as a layer's runs or a GPU-side record, each
// beside the model with the header's account of it; a file of neither
// kind is a field error of measured naming it.
func TestCompareFile(t *testing.T) {
	t.Parallel()
	p, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	const h200Note = "measured: NVIDIA H200, driver 580.159.04, CUDA 13.0, SM clock 1980 MHz, doorbell host-mapped"
	for _, tc := range []struct {
		name, path    string
		figures, note string
		rows, runs    int // at least so many
		is            error
		wantField     bool
	}{
		{name: "layer runs", path: "../testdata/h200-layer-raw.json", figures: "modelled vs measured by the native engine on NVIDIA H200", runs: 30},
		{name: "layer fragment", path: "../testdata/h200-layer.json", figures: "modelled vs measured by the native engine on NVIDIA H200", runs: 30},
		{name: "GPU record", path: "../testdata/h200-raw.json", figures: "modelled vs measured on NVIDIA H200",
			note: h200Note + "; host Intel(R) Xeon(R) Processor, 16 cores / 16 threads, linux/amd64", rows: 7 + 8},
		{name: "no issue times", path: "../testdata/h100-compute-raw.json", is: ErrNoIssue, wantField: true},
		{name: "not JSON", path: "../doc.go", wantField: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := CompareFile(p, tc.path, data)
			if tc.wantField {
				var fe *field.Error
				if !errors.As(err, &fe) || fe.Field != "measured" || fe.Value != tc.path {
					t.Fatalf("err = %v, want a field error of measured naming %s", err, tc.path)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("err = %v, want %v", err, tc.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Figures != tc.figures || c.Note != tc.note {
				t.Errorf("figures %q, note %q; want %q, %q", c.Figures, c.Note, tc.figures, tc.note)
			}
			if len(c.Rows) < tc.rows || len(c.Runs) < tc.runs || (tc.runs > 0) != (c.Layer != nil) {
				t.Errorf("%d rows, %d runs, layer %v; want at least %d rows, %d runs", len(c.Rows), len(c.Runs), c.Layer != nil, tc.rows, tc.runs)
			}
			if tc.rows > 0 && (c.Rows[0].Experiment != "ordering" || c.Summary.Rows != len(c.Rows)) {
				t.Errorf("first row %+v, summary %+v", c.Rows[0], c.Summary)
			}
		})
	}
}

// A record measured just now is shown beside the model, and the note
// says the host has no NIC in place of naming it.
func TestCompareHere(t *testing.T) {
	t.Parallel()
	p, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ReadMeasured("../testdata/h200-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(p, m, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Figures != "modelled beside measured on NVIDIA H200" || !strings.HasSuffix(c.Note, "doorbell host-mapped (no NIC on this host: the model's NIC is made non-binding for rates)") {
		t.Errorf("figures %q, note %q", c.Figures, c.Note)
	}
}
