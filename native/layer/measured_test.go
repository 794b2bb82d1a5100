package layer_test

import (
	"os"
	"strings"
	"testing"

	"moebench/native/layer"
)

// A layer measurement is read from calibrate --layer's raw file, from a
// fragment that carries it, or from its measured section alone.
func TestParseMeasured(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../testdata/h200-layer-raw.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data string
		ok         bool
		err        string
	}{
		{"raw file", string(raw), true, ""},
		{"measured section", `{"layer": ` + string(raw) + `}`, true, ""},
		{"fragment", `{"name": "x", "measured": {"layer": ` + string(raw) + `}}`, true, ""},
		{"a fragment without one", `{"name": "x", "constants": {}}`, false, ""},
		{"not JSON", `{"runs": [`, false, "JSON"},
		{"an unknown field in the section", `{"layer": {"runs": [], "extra": 1}}`, true, "layer: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, ok, err := layer.ParseMeasured([]byte(tc.data))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || ok != tc.ok || (r != nil) != tc.ok {
				t.Fatalf("ok %v, raw %v, %v; want ok %v", ok, r != nil, err, tc.ok)
			}
			if ok && r.Device.Name != "NVIDIA H200" {
				t.Errorf("device %q, want NVIDIA H200", r.Device.Name)
			}
		})
	}
}
