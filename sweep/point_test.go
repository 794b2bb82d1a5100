package sweep_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/sweep"
	"moebench/transport"
	_ "moebench/transport/gda"
	_ "moebench/transport/proxy"
)

func shape(ranks, tokens int) moe.Shape {
	return moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: tokens, Ranks: ranks, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
}

func knob(t *testing.T, name string) transport.Knob {
	t.Helper()
	for _, k := range transport.AllKnobs() {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("no knob %s", name)
	return transport.Knob{}
}

// key is what a test compares of a point.
type key struct {
	Ranks, Tokens int
	Mode          string
	NVLink        bool
	Bg            string
	Sets          string
	QPs           string
}

func keys(ps []sweep.Point) []key {
	var out []key
	for _, p := range ps {
		out = append(out, key{p.Shape.Ranks, p.Shape.Tokens, p.Mode.String(), p.NVLink, p.BackgroundName, joinSets(p.Sets), p.Knobs["qps-per-peer"]})
	}
	return out
}

func joinSets(s []string) string {
	out := ""
	for _, x := range s {
		out += x + ";"
	}
	return out
}

func TestGridPoints(t *testing.T) {
	t.Parallel()
	on := true
	qps := knob(t, "qps-per-peer")
	for _, tc := range []struct {
		name string
		g    sweep.Grid
		want []key
	}{
		{"one point, the shape's own", sweep.Grid{Shape: shape(16, 128), Modes: []moe.Mode{moe.LL}, Backgrounds: []sweep.Background{{Name: "none"}}},
			[]key{{16, 128, "ll", false, "none", "", ""}}},
		{"shapes outermost, then modes, each mode its NVLink default",
			sweep.Grid{Shape: shape(16, 128), Ranks: []int{8, 16}, Tokens: []int{4}, Modes: []moe.Mode{moe.LL, moe.Normal}, Backgrounds: []sweep.Background{{Name: "none"}}},
			[]key{{8, 4, "ll", false, "none", "", ""}, {8, 4, "normal", true, "none", "", ""}, {16, 4, "ll", false, "none", "", ""}, {16, 4, "normal", true, "none", "", ""}}},
		{"NVLink as told",
			sweep.Grid{Shape: shape(16, 128), Modes: []moe.Mode{moe.LL}, NVLink: &on, Backgrounds: []sweep.Background{{Name: "none"}}},
			[]key{{16, 128, "ll", true, "none", "", ""}}},
		{"backgrounds, then sets, then knobs, the last fastest",
			sweep.Grid{Shape: shape(16, 128), Modes: []moe.Mode{moe.LL}, Backgrounds: []sweep.Background{{Name: "none"}, {Name: "bulk"}},
				Sets: []sweep.SetAxis{{"a", []string{"1", "2"}}}, Knobs: []sweep.KnobAxis{{Knob: qps, Values: []string{"0", "4"}}}},
			[]key{{16, 128, "ll", false, "none", "a=1;", ""}, {16, 128, "ll", false, "none", "a=1;", "4"}, {16, 128, "ll", false, "none", "a=2;", ""}, {16, 128, "ll", false, "none", "a=2;", "4"},
				{16, 128, "ll", false, "bulk", "a=1;", ""}, {16, 128, "ll", false, "bulk", "a=1;", "4"}, {16, 128, "ll", false, "bulk", "a=2;", ""}, {16, 128, "ll", false, "bulk", "a=2;", "4"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps, err := tc.g.Points()
			if err != nil {
				t.Fatal(err)
			}
			if d := diff(tc.want, keys(ps)); d != "" {
				t.Errorf("points %s", d)
			}
		})
	}
}

func TestGridRefusesTheInput(t *testing.T) {
	t.Parallel()
	qps := knob(t, "qps-per-peer")
	for _, tc := range []struct {
		name  string
		g     sweep.Grid
		field string // the field the error names, "" for none
	}{
		{"tokens", sweep.Grid{Shape: shape(16, 128), Tokens: []int{0}, Modes: []moe.Mode{moe.LL}, Backgrounds: []sweep.Background{{}}}, "tokens"},
		{"a knob's value", sweep.Grid{Shape: shape(16, 128), Modes: []moe.Mode{moe.LL}, Backgrounds: []sweep.Background{{}},
			Knobs: []sweep.KnobAxis{{Knob: qps, Values: []string{"x"}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tc.g.Points()
			if !errors.Is(err, sweep.ErrInput) {
				t.Fatalf("err = %v, want the caller's input", err)
			}
			var names []string
			for _, f := range field.Fields(err) {
				names = append(names, f.Field)
			}
			if tc.field != "" && !slices.Contains(names, tc.field) {
				t.Errorf("err %v names fields %v, want %s", err, names, tc.field)
			}
		})
	}
}

func TestSetCombinations(t *testing.T) {
	t.Parallel()
	got := sweep.SetCombinations([]sweep.SetAxis{{"a", []string{"1", "2"}}, {"b", []string{"x", "y", "z"}}})
	want := [][]string{{"a=1", "b=x"}, {"a=1", "b=y"}, {"a=1", "b=z"}, {"a=2", "b=x"}, {"a=2", "b=y"}, {"a=2", "b=z"}}
	if d := diff(want, got); d != "" {
		t.Errorf("%s", d)
	}
	if got := sweep.SetCombinations(nil); len(got) != 1 || got[0] != nil {
		t.Errorf("no axes: %v, want one empty combination", got)
	}
}

func TestOnProfilesAndWithSets(t *testing.T) {
	t.Parallel()
	base, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	ps := []sweep.Point{{Shape: shape(16, 8), Mode: moe.LL, NVLink: true}, {Shape: shape(16, 8), Mode: moe.Normal}}
	if err := sweep.OnProfiles(base, ps, false); err != nil {
		t.Fatal(err)
	}
	// P-IB's NVLink domain is a node: LL stays on RDMA, normal uses NVLink.
	if ps[0].NVLink || !ps[1].NVLink {
		t.Errorf("NVLink = %v, %v, want false, true", ps[0].NVLink, ps[1].NVLink)
	}
	if p, _ := sweep.WithSets(base, nil); p != base {
		t.Error("no sets: not the base itself")
	}
	p, err := sweep.WithSets(base, []string{"gpu.sms=100"})
	if err != nil || p == base || p.Get("gpu.sms") != 100 || base.Get("gpu.sms") == 100 {
		t.Errorf("a set: %v, gpu.sms %v, base's %v", err, p.Get("gpu.sms"), base.Get("gpu.sms"))
	}
	bad := []sweep.Point{{Shape: shape(16, 8), Mode: moe.LL, Sets: []string{"no.such=1"}}}
	if err := sweep.OnProfiles(base, bad, false); !errors.Is(err, sweep.ErrInput) || len(field.Fields(err)) == 0 || field.Fields(err)[0].Field != "set" {
		t.Errorf("an unknown constant: %v, want the set field's input error", err)
	}
}

func TestNVLinkDefault(t *testing.T) {
	t.Parallel()
	nvl72 := shape(72, 8)
	nvl72.GPUsPerNode, nvl72.NVLDomain = 4, 72
	for _, tc := range []struct {
		s    moe.Shape
		mode moe.Mode
		want bool
	}{
		{shape(16, 8), moe.LL, false},
		{shape(16, 8), moe.Normal, true},
		{nvl72, moe.LL, true},
	} {
		if got := sweep.NVLinkDefault(tc.s, tc.mode); got != tc.want {
			t.Errorf("NVLinkDefault(%d GPUs a node, domain %d, %s) = %v, want %v", tc.s.GPUsPerNode, tc.s.DomainGPUs(), tc.mode, got, tc.want)
		}
	}
}

func TestFaultsExpand(t *testing.T) {
	t.Parallel()
	pts := []sweep.Point{{Shape: shape(16, 8)}, {Shape: shape(32, 8)}}
	f := sweep.Faults{Specs: []string{"slow:3:2"}, Loss: []float64{0, 1e-4}, Swept: true, Seeds: 2}
	out, err := f.Expand(pts)
	if err != nil {
		t.Fatal(err)
	}
	type fk struct {
		Ranks, Point int
		Loss         string
		Seed         uint64
	}
	var got []fk
	for _, p := range out {
		if p.Fault.Plan == nil || p.Fault.Seeds != 2 {
			t.Errorf("point %+v: no plan or seeds %d", p.Fault, p.Fault.Seeds)
		}
		got = append(got, fk{p.Shape.Ranks, p.Fault.Point, p.Fault.Loss, p.Fault.Seed})
	}
	want := []fk{{16, 0, "0", 1}, {16, 0, "0", 2}, {16, 1, "0.0001", 1}, {16, 1, "0.0001", 2},
		{32, 2, "0", 1}, {32, 2, "0", 2}, {32, 3, "0.0001", 1}, {32, 3, "0.0001", 2}}
	if d := diff(want, got); d != "" {
		t.Errorf("%s", d)
	}
	if _, err := (sweep.Faults{Specs: []string{"slow:40:2"}, Seed: 1}).Expand(pts); !errors.Is(err, sweep.ErrInput) {
		t.Errorf("a rank past the layer's: %v, want the caller's input", err)
	}
	if out, _ := (sweep.Faults{}).Expand(pts); len(out) != 2 || out[0].Fault.Plan != nil {
		t.Errorf("healthy: %v", out)
	}
}

// diff is "" when want and got are equal, else both.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("\nwant %+v\n got %+v", want, got)
}
