package transport_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/transport"
	_ "moebench/transport/gda"
	_ "moebench/transport/proxy"
)

func TestKnobCheck(t *testing.T) {
	t.Parallel()
	ints := transport.Knob{Name: "dcis", Min: 1, Max: 64}
	choice := transport.Knob{Name: "ordering", Choices: []string{"gpu-fence", "threadfence"}}
	for _, tc := range []struct {
		name string
		k    transport.Knob
		v    string
		want string // "" = accepted
	}{
		{"in range", ints, "16", ""},
		{"at the minimum", ints, "1", ""},
		{"below", ints, "0", "dcis 0: must be at least 1"},
		{"above", ints, "65", "dcis 65: must be at most 64"},
		{"not a number", ints, "many", `dcis "many": want an integer`},
		{"a choice", choice, "threadfence", ""},
		{"not a choice", choice, "none", `ordering "none": want one of gpu-fence, threadfence`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.k.Check(tc.v)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%q: %v", tc.v, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("%q: %v, want %q", tc.v, err, tc.want)
			case tc.want != "" && (len(field.Fields(err)) != 1 || field.Fields(err)[0].Field != tc.k.Name):
				// A command shows the field as its flag.
				t.Errorf("%q: fields %v, want the knob %s", tc.v, field.Fields(err), tc.k.Name)
			}
		})
	}
}

// A list of sizes is refused at its first value below 1 or past the
// knob's bounds, naming the knob and the value.
func TestKnobCheckSizes(t *testing.T) {
	t.Parallel()
	k := transport.Knob{Name: "dcis", Min: 0, Max: 64}
	for _, tc := range []struct {
		v    []int
		want string // "" for none
	}{
		{nil, ""},
		{[]int{1, 64, 8}, ""},
		{[]int{4, 0, 100}, "dcis 0: must be at least 1"},
		{[]int{-3}, "dcis -3: must be at least 1"},
		{[]int{2, 65}, "dcis 65: must be at most 64"},
	} {
		err := k.CheckSizes(tc.v)
		got := ""
		if err != nil {
			got = err.Error()
			if fs := field.Fields(err); len(fs) != 1 || fs[0].Field != "dcis" {
				t.Errorf("%v: names %v, want dcis", tc.v, fs)
			}
		}
		if got != tc.want {
			t.Errorf("CheckSizes(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	s := transport.Settings{"workers": "4", "ordering": "gpu-fence"}
	if s.Int("workers") != 4 || s.Int("rings") != 0 {
		t.Errorf("Int: workers %d, rings %d", s.Int("workers"), s.Int("rings"))
	}
	c := s.Clone()
	c["workers"] = "8"
	if s["workers"] != "4" {
		t.Error("Clone shares the map")
	}
	if u := s.Unknown([]transport.Knob{{Name: "workers"}}); u != "ordering" {
		t.Errorf("Unknown = %q, want ordering", u)
	}
	if u := s.Unknown([]transport.Knob{{Name: "workers"}, {Name: "ordering"}}); u != "" {
		t.Errorf("Unknown = %q, want none", u)
	}
}

// The built-in mechanisms declare themselves: names, knobs with help,
// causes, and a knob declared twice (ordering; srd's workers and rings)
// listed once.
func TestBuiltInMechanismsDeclareThemselves(t *testing.T) {
	t.Parallel()
	var names []string
	for _, m := range transport.Mechanisms() {
		names = append(names, m.Name())
		if m.Summary() == "" || len(m.Causes()) == 0 || len(m.Causes()) > transport.MaxOwnCauses {
			t.Errorf("%s: summary %q, %d causes", m.Name(), m.Summary(), len(m.Causes()))
		}
		for _, k := range m.Knobs() {
			if k.Help == "" || k.Column == "" || k.Label == "" {
				t.Errorf("%s: knob %s lacks help, a column or a label", m.Name(), k.Name)
			}
		}
		if _, ok := m.(transport.Sizer); !ok {
			t.Errorf("%s cannot be sized", m.Name())
		}
	}
	for _, want := range []string{"mini-gda", "dc", "mini-proxy", "srd"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not registered (have %v)", want, names)
		}
	}
	if got := transport.Names(); !slices.Equal(got, names) {
		t.Errorf("Names() = %v, want the mechanisms' %v", got, names)
	}
	var knobs []string
	for _, k := range transport.AllKnobs() {
		knobs = append(knobs, k.Name)
	}
	if got := strings.Join(knobs, ","); got != "qps-per-peer,ordering,dcis,workers,batch,rings,srd-qps" {
		t.Errorf("knobs %s", got)
	}
	var causes []string
	for _, c := range transport.Causes() {
		causes = append(causes, c.Name)
	}
	if got := strings.Join(causes, ","); got != "conn_miss,dci_switch,ah_miss,flag_wait" {
		t.Errorf("causes %s", got)
	}
	if _, err := transport.Lookup("carrier-pigeon"); err == nil || !strings.Contains(err.Error(), "mini-gda") {
		t.Errorf("an unknown mechanism's error should list the known: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering mini-gda twice did not panic")
		}
	}()
	m, _ := transport.Lookup("mini-gda")
	transport.Register(m)
}

// A sizing study's grid follows the user's lists, sorted and without
// repeats, and rejects a value below one.
func TestSizeSpace(t *testing.T) {
	t.Parallel()
	m, err := transport.Lookup("mini-proxy")
	if err != nil {
		t.Fatal(err)
	}
	sz := m.(transport.Sizer)
	got, err := sz.SizeSpace(8, map[string][]int{"workers": {2, 1, 2}, "batch": {4}})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, s := range got {
		labels = append(labels, s.Label)
	}
	if l := strings.Join(labels, " "); l != "T1/R1/B4 T1/R8/B4 T2/R2/B4 T2/R16/B4" {
		t.Errorf("labels %s", l)
	}
	if _, err := sz.SizeSpace(8, map[string][]int{"rings": {0}}); err == nil || !strings.Contains(err.Error(), "rings 0") || len(field.Fields(err)) == 0 || field.Fields(err)[0].Field != "rings" {
		t.Errorf("rings 0: %v", err)
	}
}

// Max keeps the larger of each figure, the mechanisms' own by name, and
// leaves its inputs alone.
func TestResourcesMax(t *testing.T) {
	t.Parallel()
	a := transport.Resources{QPsPerNIC: 4, ConnMissRate: 0.5, Own: map[string]int{"lanes": 2, "contexts": 8}}
	b := transport.Resources{QPsPerNIC: 16, ActiveConnPerNIC: 2, HostQueues: true, Own: map[string]int{"lanes": 4}}
	got := a.Max(b)
	if got.QPsPerNIC != 16 || got.ActiveConnPerNIC != 2 || got.ConnMissRate != 0.5 || !got.HostQueues ||
		got.Own["lanes"] != 4 || got.Own["contexts"] != 8 || a.Own["lanes"] != 2 {
		t.Errorf("max %+v (a's own now %v)", got, a.Own)
	}
	if got := (transport.Resources{QPsPerNIC: 1}).Max(transport.Resources{}); got.Own != nil || got.QPsPerNIC != 1 {
		t.Errorf("max without own resources: %+v", got)
	}
}

// Check accepts exactly the integers in range (or the choices) and never
// panics on what a user types.
func FuzzKnobCheck(f *testing.F) {
	for _, s := range []string{"0", "1", "64", "65", "-3", "x", "", "gpu-fence", "9999999999999999999999"} {
		f.Add(s)
	}
	ints := transport.Knob{Name: "dcis", Min: 1, Max: 64}
	choice := transport.Knob{Name: "ordering", Choices: []string{"gpu-fence", "threadfence"}}
	f.Fuzz(func(t *testing.T, v string) {
		n, convErr := strconv.Atoi(v)
		if ok := ints.Check(v) == nil; ok != (convErr == nil && n >= 1 && n <= 64) {
			t.Errorf("dcis %q accepted %v", v, ok)
		}
		if ok := choice.Check(v) == nil; ok != (v == "gpu-fence" || v == "threadfence") {
			t.Errorf("ordering %q accepted %v", v, ok)
		}
	})
}

// The built-in mechanisms declare their own kinds of resource (DC's
// initiators, a proxy's rings and workers) and what their layers cost the
// simulation; HeldBy keeps a report to its own mechanisms'.
func TestDeclaredResourcesAndCosts(t *testing.T) {
	t.Parallel()
	names := func(rs []transport.Resource) []string {
		var n []string
		for _, r := range rs {
			n = append(n, r.Name)
		}
		return n
	}
	if got := names(transport.HeldBy([]string{"mini-proxy"})); !slices.Equal(got, []string{"proxy rings", "proxy workers"}) {
		t.Errorf("mini-proxy holds %v", got)
	}
	if got := names(transport.HeldBy([]string{"mini-gda", "dc"})); !slices.Equal(got, []string{"DCIs/NIC"}) {
		t.Errorf("mini-gda and dc hold %v", got)
	}
	if got := names(transport.Held()); !slices.Contains(got, "DCIs/NIC") || !slices.Contains(got, "proxy workers") {
		t.Errorf("all hold %v", got)
	}
	for _, tc := range []struct {
		mech     string
		ranks    int
		channels int
		s        transport.Settings
		want     transport.SimCost
	}{
		// RC: a QP per peer for each channel, at least four, or the knob's.
		{"mini-gda", 16, 2, nil, transport.SimCost{Queues: 16 * 16 * 4}},
		{"mini-gda", 16, 8, nil, transport.SimCost{Queues: 16 * 16 * 8}},
		{"mini-gda", 16, 8, transport.Settings{"qps-per-peer": "32"}, transport.SimCost{Queues: 16 * 16 * 32}},
		// DC: 400 B a DCI, at least 64 a rank.
		{"dc", 16, 8, nil, transport.SimCost{Bytes: 400 * 16 * 64}},
		{"dc", 16, 8, transport.Settings{"dcis": "128"}, transport.SimCost{Bytes: 400 * 16 * 128}},
		// A proxy: 1 KiB a ring (at least 64 a rank), four QPs a peer, and its records per op.
		{"mini-proxy", 16, 8, transport.Settings{"rings": "100"}, transport.SimCost{Queues: 16 * 16 * 4, Bytes: 1024 * 16 * 100,
			Side: transport.OpBytes{PerPair: 263, PerSel: 220}, InTurn: transport.OpBytes{PerPair: 158}}},
		// A mechanism that declares nothing (or is unknown): RC's default.
		{"no-such", 16, 8, nil, transport.SimCost{Queues: 16 * 16 * 8}},
	} {
		if got := transport.CostOf(tc.mech, tc.ranks, tc.channels, tc.s); got != tc.want {
			t.Errorf("%s, %d ranks, %d channels, %v: %+v, want %+v", tc.mech, tc.ranks, tc.channels, tc.s, got, tc.want)
		}
	}
}
