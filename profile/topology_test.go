package profile_test

import (
	"testing"

	"slices"

	"moebench/internal/field"
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

// SetTopology sets the constants the fabric stands for with the source
// given, leaves the others, and refuses a name it does not read as the
// topology field.
func TestSetTopology(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	radix := p.Get("topo.leaf_radix")
	if err := p.SetTopology("leaf-spine:adaptive", "the fabric asked for"); err != nil {
		t.Fatal(err)
	}
	if p.Get("topo.tiers") != 2 || p.Get("topo.adaptive") != 1 || p.Get("topo.leaf_radix") != radix {
		t.Errorf("tiers %v, adaptive %v, leaf radix %v: want 2, 1 and %v", p.Get("topo.tiers"), p.Get("topo.adaptive"), p.Get("topo.leaf_radix"), radix)
	}
	if c, ok := p.Constant("topo.tiers"); !ok || c.Source != "the fabric asked for" {
		t.Errorf("topo.tiers: %+v, want the source given", c)
	}
	err := p.SetTopology("torus", "x")
	fs := field.Fields(err)
	if want := `topology: "torus": want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive`; err == nil || err.Error() != want || len(fs) != 1 || fs[0].Field != "topology" {
		t.Errorf("torus: %v, want %q naming topology", err, want)
	}
}
