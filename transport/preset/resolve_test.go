package preset_test

import (
	"slices"
	"testing"

	"moebench/internal/field"
	_ "moebench/transport/gda"
	"moebench/transport/preset"
	_ "moebench/transport/proxy"
)

func TestResolve(t *testing.T) {
	t.Parallel()
	names := func(ps []preset.Preset) []string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name)
		}
		return n
	}
	for _, tc := range []struct {
		name        string
		mechs, pres []string
		byName      bool
		want        []string
		field       string
	}{
		{"a mechanism runs its own preset", []string{"mini-gda", "mini-proxy"}, nil, false, []string{"mini-gda", "mini-proxy"}, ""},
		{"dc through its preset", []string{"dc"}, nil, false, []string{"dc"}, ""},
		{"presets by name", nil, []string{"deepep-v1", "uccl-ep"}, true, []string{"deepep-v1", "uccl-ep"}, ""},
		{"unknown mechanism", []string{"warp-drive"}, nil, false, nil, "transport"},
		{"no mechanism", nil, nil, false, nil, "transport"},
		{"unknown preset", nil, []string{"nope"}, true, nil, "preset"},
		{"no preset", nil, nil, true, nil, "preset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps, err := preset.Resolve(tc.mechs, tc.pres, tc.byName, nil)
			if tc.field != "" {
				if fs := field.Fields(err); len(fs) != 1 || fs[0].Field != tc.field {
					t.Fatalf("error %v, want one about %s", err, tc.field)
				}
				return
			}
			if err != nil || !slices.Equal(names(ps), tc.want) {
				t.Errorf("%v, %v; want %v", names(ps), err, tc.want)
			}
		})
	}
}
