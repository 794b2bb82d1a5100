package sizing_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"moebench/budget"
	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/sizing"
	_ "moebench/transport/gda"
	"moebench/transport/preset"
	"moebench/transport/proxy"
	"moebench/workloads"
)

// request is a small valid study: EP16 of DeepSeek-V3 at 8 tokens on
// mini-gda, changed by edit.
func request(edit func(*sizing.Request)) sizing.Request {
	w, _ := workloads.Get("deepseek-v3")
	s := w.Shape
	s.Ranks, s.Tokens = 16, 8
	r := sizing.Request{Shape: s, Profile: profile.MustLoad("p-ib"), Mode: "ll", Background: "none", Routing: "uniform",
		Seed: 1, Transports: []string{"mini-gda"}, Jobs: 1}
	if edit != nil {
		edit(&r)
	}
	return r
}

// Plan refuses each wrong input as the field it names or its own error,
// and otherwise resolves the deployment.
func TestPlan(t *testing.T) {
	t.Parallel()
	on := true
	for _, tc := range []struct {
		name  string
		edit  func(*sizing.Request)
		field string // the field refused, "" for none
		is    error  // or the error refused
		msg   string // in the message
	}{
		{name: "valid"},
		{name: "mode", edit: func(r *sizing.Request) { r.Mode = "fast" }, field: "mode", msg: `unknown mode "fast"`},
		{name: "background", edit: func(r *sizing.Request) { r.Background = "x" }, field: "background", msg: `background "x"`},
		{name: "routing", edit: func(r *sizing.Request) { r.Routing = "x" }, field: "routing", msg: `routing "x"`},
		{name: "negative SMs", edit: func(r *sizing.Request) { r.NumSMs = -1 }, is: sizing.ErrNegative},
		{name: "chunk in LL", edit: func(r *sizing.Request) { r.ChunkGiven = true }, is: moe.ErrChunkMode},
		{name: "chunk in normal", edit: func(r *sizing.Request) { r.Mode, r.Chunk, r.ChunkGiven = "normal", 4, true }},
		{name: "no ranks", edit: func(r *sizing.Request) { r.Shape.Ranks = 0 }, msg: "rank"},
		{name: "mode before background", edit: func(r *sizing.Request) { r.Mode, r.Background = "x", "x" }, field: "mode"},
		{name: "NVLink asked for", edit: func(r *sizing.Request) { r.NVLink = &on }},
		{name: "knob list", edit: func(r *sizing.Request) { r.Knobs = map[string][]int{"qps-per-peer": {1, 2, 4}} }},
		{name: "knob below 1", edit: func(r *sizing.Request) { r.Knobs = map[string][]int{"qps-per-peer": {2, 0}} },
			field: "qps-per-peer", msg: "qps-per-peer 0: must be at least 1"},
		{name: "knob not taken", edit: func(r *sizing.Request) { r.Knobs = map[string][]int{"dcis": {4}} }, msg: "dcis applies to dc"},
		// Every knob given is checked, not only the first a mechanism takes.
		{name: "a later knob not taken", edit: func(r *sizing.Request) { r.Knobs = map[string][]int{"qps-per-peer": {1, 2}, "dcis": {4}} }, msg: "dcis applies to dc"},
		{name: "knob values before taking", edit: func(r *sizing.Request) { r.Knobs = map[string][]int{"dcis": {0}} }, field: "dcis"},
		{name: "limits", edit: func(r *sizing.Request) { r.Limits.Tolerance = 2 }, field: "tolerance"},
		{name: "jobs", edit: func(r *sizing.Request) { r.Jobs = -1 }, field: "jobs", msg: "jobs -1: must be 0 (one per core) or more"},
		{name: "limits before jobs", edit: func(r *sizing.Request) { r.Jobs, r.Limits.TargetUs = -1, -1 }, field: "target-us"},
	} {
		st, err := sizing.Plan(request(tc.edit))
		fs := field.Fields(err)
		switch {
		case tc.field == "" && tc.is == nil && tc.msg == "":
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		case err == nil:
			t.Errorf("%s: planned, want a refusal", tc.name)
		case tc.field != "" && (len(fs) == 0 || fs[0].Field != tc.field):
			t.Errorf("%s: %v names %v, want %s", tc.name, err, fs, tc.field)
		case tc.is != nil && !errors.Is(err, tc.is):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
		case !strings.Contains(err.Error(), tc.msg):
			t.Errorf("%s: %v, want %q in it", tc.name, err, tc.msg)
		}
		if ke := (*preset.KnobError)(nil); strings.HasSuffix(tc.name, "knob not taken") != errors.As(err, &ke) {
			t.Errorf("%s: %v, a KnobError only where no preset takes the knob", tc.name, err)
		}
		if err != nil {
			continue
		}
		if want := tc.name == "knob list"; want != (len(st.Space.Knobs["qps-per-peer"]) == 3) {
			t.Errorf("%s: knob lists %v", tc.name, st.Space.Knobs)
		}
		d := st.Deployment
		if d.Routing == nil || d.Routing.Shape.Ranks != 16 || len(st.Space.Presets) != 1 || st.Jobs != 1 {
			t.Errorf("%s: routing %v, presets %v, jobs %d", tc.name, d.Routing != nil, st.Space.Presets, st.Jobs)
		}
		// NVLink is off by default in LL mode on one-host domains, on in
		// normal mode and where asked for.
		if want := tc.name == "chunk in normal" || tc.name == "NVLink asked for"; d.NVLink != want {
			t.Errorf("%s: NVLink %v, want %v", tc.name, d.NVLink, want)
		}
	}
}

// A study over the budget is refused before its routing is generated,
// saying how many candidates would have run at once; with Jobs 0 it comes
// down to what fits, one at least.
func TestPlanFitsTheBudget(t *testing.T) {
	t.Parallel()
	_, err := sizing.Plan(request(func(r *sizing.Request) { r.Budget, r.Jobs = budget.Budget{Bytes: 1 << 20}, 2 }))
	var over *sizing.OverBudget
	if !errors.As(err, &over) || over.Jobs != 2 || over.Err.What != "size of EP16 × 8 tokens × top-8" {
		t.Fatalf("%v, want a refusal of 2 jobs", err)
	}
	st, err := sizing.Plan(request(func(r *sizing.Request) { r.Jobs = 0 }))
	if err != nil || st.Jobs < 1 {
		t.Fatalf("Jobs 0: %v, %v", err, st)
	}
}

// NewLimits checks each limit as the field commands name it.
func TestNewLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		l    sizing.LimitsRequest
		want string // the error, "" for none
	}{
		{"none", sizing.LimitsRequest{Tolerance: 0.05, Own: map[string]int{"proxy-cores": -1}}, ""},
		{"GiB", sizing.LimitsRequest{MaxBufferGiB: 2, Tolerance: 0.05}, ""},
		{"NaN GiB", sizing.LimitsRequest{MaxBufferGiB: nan()}, "max-buffer-gib NaN: want a finite number from 0 to 1048576"},
		{"target", sizing.LimitsRequest{TargetUs: 2e12}, "target-us 2e+12: want a finite number from 0 to 1e+12"},
		{"tolerance", sizing.LimitsRequest{Tolerance: 2}, "tolerance 2: want a finite number from 0 to 1"},
		{"QPs", sizing.LimitsRequest{MaxQPsPerNIC: -1}, "max-qps-per-nic: max QPs per NIC: -1 is negative (0: no limit)"},
		{"own", sizing.LimitsRequest{Own: map[string]int{proxy.WorkersResource: -5}}, "proxy-cores: -5, want -1 (no limit) or more"},
	} {
		lim, err := sizing.NewLimits(tc.l)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if err == nil && lim.MaxGPUBytes != int64(tc.l.MaxBufferGiB)<<30 {
			t.Errorf("%s: %d B of GPU memory, want %g GiB", tc.name, lim.MaxGPUBytes, tc.l.MaxBufferGiB)
		}
	}
}

func nan() float64 { return math.NaN() }

// The header names the layer, its routing, background and presets, the
// compute where the layer carries it, and what the figures are of.
func TestStudyHeader(t *testing.T) {
	t.Parallel()
	st, err := sizing.Plan(request(func(r *sizing.Request) {
		r.Routing, r.Background, r.Presets, r.ByPreset = "powerlaw:1.2", "bulk:8", []string{"deepep-v1", "uccl-ep"}, true
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		compute string
		want    []string
	}{
		{"", []string{
			"workload deepseek-v3: 256 experts, top-8, hidden 7168, 8 tokens/rank, EP16 = 2 nodes × 8 GPUs, ll mode, NVLink off",
			"routing powerlaw:1.2; background bulk:8; presets deepep-v1, uccl-ep",
			"layer = dispatch + combine of the slowest rank; resources per NIC, per GPU and per host of 8 GPUs",
		}},
		{"experts' compute: a note", []string{
			"workload deepseek-v3: 256 experts, top-8, hidden 7168, 8 tokens/rank, EP16 = 2 nodes × 8 GPUs, ll mode, NVLink off",
			"routing powerlaw:1.2; background bulk:8; presets deepep-v1, uccl-ep",
			"experts' compute: a note",
			"layer = the layer with its experts' compute, its communication exposed or hidden by the overlap; resources per NIC, per GPU and per host of 8 GPUs",
		}},
	} {
		if got := st.Header("deepseek-v3", "bulk:8", tc.compute); !slices.Equal(got, tc.want) {
			t.Errorf("compute %q:\n got %q\nwant %q", tc.compute, got, tc.want)
		}
	}
}
