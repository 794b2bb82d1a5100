package layer

import (
	"errors"
	"os"
	"testing"
)

// Layer measurements read one by one add up to their runs together; data
// without one is ErrNoLayer, and data that is not JSON is another error.
func TestAddMeasured(t *testing.T) {
	t.Parallel()
	var raw *Raw
	for _, f := range []string{"h200-layer-raw.json", "h200-layer-normal-raw.json"} {
		data, err := os.ReadFile("../testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = AddMeasured(raw, data); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if got := len(raw.Runs); got != 30+8 {
		t.Errorf("%d runs, want the files' 30 and 8", got)
	}
	if _, err := AddMeasured(raw, []byte(`{"gpu": "H200"}`)); !errors.Is(err, ErrNoLayer) {
		t.Errorf("a GPU record: %v, want ErrNoLayer", err)
	}
	if _, err := AddMeasured(nil, []byte(`{"runs": [`)); err == nil || errors.Is(err, ErrNoLayer) {
		t.Errorf("cut-short JSON: %v, want a JSON error", err)
	}
}
