package results

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"moebench/internal/report"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/transport/gda"
)

// The calibration documents' JSON carries the measurement and the
// constants under the keys a fragment's reader and scripts expect, and
// nothing of the table's.
func TestCalibrationJSONKeys(t *testing.T) {
	t.Parallel()
	consts := []profile.Constant{{Name: "gpu.sms", Value: 132, Unit: "count", Source: "s"}}
	for _, tc := range []struct {
		name string
		doc  Document
		want []string
	}{
		{"gpu", &GPUCalibration{Header: report.Header{Command: "calibrate"}, Constants: consts, Out: "x.json"}, []string{"constants", "measured"}},
		{"compute", NewComputeCalibration(report.Header{Command: "calibrate --compute"}, calib.ComputeMeasured{GPU: "H100"}, calib.ComputeFit{}, consts),
			[]string{"constants", "fit", "measured"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if err := Render(&b, "json", tc.doc); err != nil {
				t.Fatal(err)
			}
			var v map[string]json.RawMessage
			if err := json.Unmarshal([]byte(b.String()), &v); err != nil {
				t.Fatal(err)
			}
			if got := slices.Sorted(maps.Keys(v)); !slices.Equal(got, tc.want) {
				t.Errorf("keys %v, want %v", got, tc.want)
			}
		})
	}
}

// The GPU calibration's table names the fragment written and leaves out
// the nanosecond constants the fit left at zero (the cycles carry them).
func TestGPUCalibrationTable(t *testing.T) {
	t.Parallel()
	d := &GPUCalibration{Measured: gda.Measured{GPU: "NVIDIA H200", SMs: 132}, Out: "cal.json", Constants: []profile.Constant{
		{Name: "gpu.sms", Value: 132, Unit: "count"}, {Name: "gpu.atomic.ns", Value: 0, Unit: "ns"}, {Name: "gpu.atomic.cycles", Value: 287.64, Unit: "cycles"}}}
	var b strings.Builder
	if err := Render(&b, "table", d); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"moebench calibrate: NVIDIA H200, driver , CUDA , 132 SMs", "\nConstants written to cal.json\n", "gpu.atomic.cycles  287.6  cycles"} {
		if !strings.Contains(out, want) {
			t.Errorf("table without %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "gpu.atomic.ns") {
		t.Errorf("table shows a zero ns constant:\n%s", out)
	}
}
