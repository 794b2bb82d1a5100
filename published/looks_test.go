package published

import (
	"os"
	"testing"
)

// A file of DeepEP runs is told from the calibration measurements given
// in its place, calibrate --layer's raw runs among them (they too list
// "runs").
func TestLooksLikeRuns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path string
		want bool
	}{
		{"testdata/deepep-h800.json", true},
		{"../native/testdata/h100-transfer-raw.json", false},
		{"../native/testdata/h200-layer-raw.json", false},
		{"../native/testdata/h200-raw.json", false},
	} {
		data, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := LooksLikeRuns(data); got != c.want {
			t.Errorf("%s: LooksLikeRuns = %v, want %v", c.path, got, c.want)
		}
	}
	for _, c := range []struct {
		data string
		want bool
	}{
		{`{"runs": []}`, true},
		{`{"runs": [{"mode": "ll"}]}`, true},
		{`{"device": {}, "runs": [{"point": {}}]}`, false},
		{`{"runs": [{"point": {"ranks": 2}}]}`, false},
		{"# mine\nmode,ranks,gpus_per_node\nll,8,8\n", true},
		{`{"constants": []}`, false},
	} {
		if got := LooksLikeRuns([]byte(c.data)); got != c.want {
			t.Errorf("%q: LooksLikeRuns = %v, want %v", c.data, got, c.want)
		}
	}
}
