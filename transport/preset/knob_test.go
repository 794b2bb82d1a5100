package preset_test

import (
	"errors"
	"slices"
	"testing"

	_ "moebench/transport/gda"
	"moebench/transport/preset"
	_ "moebench/transport/proxy"
)

// A knob is refused only where none of the chosen presets' mechanisms
// declares it, naming those that do and those chosen, once each.
func TestCheckTaken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		knob    string
		presets []string
		chosen  []string // the refusal's, nil when taken
	}{
		{"qps-per-peer", []string{"deepep-v1"}, nil},
		{"qps-per-peer", []string{"uccl-ep", "gdaki"}, nil},
		{"workers", []string{"uccl-ep"}, nil},
		{"dcis", []string{"deepep-v1", "gdaki", "uccl-ep"}, []string{"mini-gda", "mini-proxy"}},
		{"workers", []string{"dc"}, []string{"dc"}},
	} {
		var ps []preset.Preset
		for _, n := range tc.presets {
			p, err := preset.Get(n)
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
		err := preset.CheckTaken(tc.knob, ps)
		var ke *preset.KnobError
		switch {
		case tc.chosen == nil && err != nil:
			t.Errorf("%s on %v: %v", tc.knob, tc.presets, err)
		case tc.chosen == nil:
		case !errors.As(err, &ke):
			t.Errorf("%s on %v: %v, want a KnobError", tc.knob, tc.presets, err)
		case ke.Knob != tc.knob || !slices.Equal(ke.Chosen, tc.chosen) || len(ke.Takers) == 0 || slices.Contains(ke.Takers, tc.chosen[0]):
			t.Errorf("%s on %v: %+v, want chosen %v", tc.knob, tc.presets, ke, tc.chosen)
		}
	}
	err := preset.CheckTaken("dcis", nil)
	if want := "dcis applies to dc; none of the chosen mechanisms () takes it"; err == nil || err.Error() != want {
		t.Errorf("no presets: %v, want %q", err, want)
	}
}
