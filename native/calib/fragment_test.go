package calib

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"moebench/profile"
)

// A fragment carries the record it was fitted to, which reads back the
// same, and tells what to combine it after.
func TestFragmentsCarryTheirRecord(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../testdata/h100-compute-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseComputeMeasured(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.GPU != "NVIDIA H100 80GB HBM3" || len(m.GEMMs) == 0 {
		t.Fatalf("read %q with %d GEMMs", m.GPU, len(m.GEMMs))
	}
	consts := []profile.Constant{{Name: "gemm.beside", Value: 1.5}}
	frag, err := ComputeFragment(m, consts, "p-h100", "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(frag.Description, "e.g. p-h100,c.json") || frag.Name != "compute-calibration" || !reflect.DeepEqual(frag.Constants, consts) {
		t.Errorf("fragment %q %q %v", frag.Name, frag.Description, frag.Constants)
	}
	back, err := ParseComputeMeasured(frag.Measured)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Errorf("the record read back differs (%v)", err)
	}
	raw, err := os.ReadFile("../testdata/h200-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseMeasured(raw)
	if err != nil {
		t.Fatal(err)
	}
	frag, err = Fragment(g, nil, "h.json")
	if err != nil {
		t.Fatal(err)
	}
	var again json.RawMessage
	if err := json.Unmarshal(frag.Measured, &again); err != nil || !strings.HasSuffix(frag.Description, "e.g. p-ib,h.json") || !strings.Contains(frag.Description, g.GPU) {
		t.Errorf("GPU fragment %q (%v)", frag.Description, err)
	}
}

// A record that is not JSON is refused with its line.
func TestParseMeasuredNamesTheLine(t *testing.T) {
	t.Parallel()
	for _, parse := range []func([]byte) error{
		func(b []byte) error { _, err := ParseMeasured(b); return err },
		func(b []byte) error { _, err := ParseComputeMeasured(b); return err },
	} {
		if err := parse([]byte("{\n\"gpu\": x}")); err == nil || !strings.HasPrefix(err.Error(), "line 2") {
			t.Errorf("got %v, want the line named", err)
		}
	}
}

func TestOptionsCheckNamesIters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		iters int
		want  string
	}{{9, "iters 9: want 10..3900"}, {10, ""}, {3900, ""}, {3901, "iters 3901: want 10..3900"}} {
		err := Options{Iters: tc.iters}.Check()
		if (err == nil) != (tc.want == "") || err != nil && err.Error() != tc.want {
			t.Errorf("%d: got %v, want %q", tc.iters, err, tc.want)
		}
	}
}
