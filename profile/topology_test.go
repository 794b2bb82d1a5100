package profile_test

import (
	"testing"

	"slices"

	"moebench/profile"
)

func TestParseTopology(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []profile.Setting
		err  string
	}{
		{"switch", []profile.Setting{{Name: "topo.tiers", Value: 1}}, ""},
		{" Leaf-Spine ", []profile.Setting{{Name: "topo.tiers", Value: 2}}, ""},
		{"leaf-spine:ecmp", []profile.Setting{{Name: "topo.tiers", Value: 2}, {Name: "topo.adaptive", Value: 0}}, ""},
		{"leaf-spine:ADAPTIVE", []profile.Setting{{Name: "topo.tiers", Value: 2}, {Name: "topo.adaptive", Value: 1}}, ""},
		{"switch:ecmp", nil, `"switch:ecmp": one switch has no routing to choose (want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive)`},
		{"leaf-spine:random", nil, `"leaf-spine:random": routing "random": want ecmp or adaptive`},
		{"torus", nil, `"torus": want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive`},
		{"", nil, `"": want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive`},
	} {
		got, err := profile.ParseTopology(tc.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %q; want %v, %q", tc.in, got, msg, tc.want, tc.err)
		}
	}
}

func FuzzParseTopology(f *testing.F) {
	for _, s := range []string{"switch", "leaf-spine", "leaf-spine:adaptive", "leaf-spine:ecmp", "x:y:z", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := profile.ParseTopology(s)
		if err != nil {
			return
		}
		if len(vals) == 0 || vals[0].Name != "topo.tiers" {
			t.Fatalf("%q: %v does not set the tiers first", s, vals)
		}
	})
}
