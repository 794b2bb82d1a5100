package sizing

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
)

// deployment is DeepSeek-V3's layer on ranks GPUs (8 per node) with
// experts experts and tokens tokens per rank, on P-IB with sets applied.
func deployment(t testing.TB, ranks, experts, tokens int, sets ...string) Deployment {
	t.Helper()
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	s := w.Shape
	s.Ranks, s.Tokens = ranks, tokens
	if experts != s.Experts {
		s.Experts, s.PhysicalExperts = experts, 0
	}
	rt, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := profile.MustLoad("p-ib")
	if err := p.ApplySets(sets); err != nil {
		t.Fatal(err)
	}
	return Deployment{Routing: rt, Mode: moe.LL, Profile: p, NoPayload: true}
}

func presets(t testing.TB, names ...string) []preset.Preset {
	t.Helper()
	var out []preset.Preset
	for _, n := range names {
		p, err := preset.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// The estimators agree with the runs: the same resources, the same number
// of operations, and a floor no run beats.
func TestEstimatesAgreeWithRuns(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("runs candidates one at a time; the studies cover the parallel runs under the race detector")
	}
	for _, tc := range []struct {
		name    string
		experts int
		nvlink  bool // same-node peers over NVLink: no queue, no NIC
	}{{"sixteen local experts", 256, false}, {"one local expert", 16, false}, {"NVLink", 256, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := deployment(t, 16, tc.experts, 16)
			d.NVLink = tc.nvlink
			st := &Study{Deployment: d, Space: Space{Presets: presets(t, "mini-gda", "dc", "mini-proxy"),
				Knobs: map[string][]int{"qps-per-peer": {1, 32}, "dcis": {1, 16}, "workers": {1, 4}, "rings": {4}, "batch": {1, 16}}}}
			cands, err := Candidates(&st.Deployment, st.Space)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.estimate(cands); err != nil {
				t.Fatal(err)
			}
			disp, _, _ := moe.Demands(d.Routing, d.Mode, d.NVLink, d.Background)
			var ops int64
			for _, f := range disp.Flows {
				ops += f.Ops()
			}
			for i := range cands {
				c := &cands[i]
				est := c.Resources
				if err := st.runOne(c); err != nil {
					t.Fatal(err)
				}
				run := c.Resources
				est.Estimated, est.ConnMissRate, run.ConnMissRate = false, 0, 0
				if !reflect.DeepEqual(est, run) {
					t.Errorf("%s: estimated %+v, ran %+v", c.Name, est, run)
				}
				if c.FloorUs <= 0 || c.FloorUs > c.Figures.LayerUs {
					t.Errorf("%s: floor %.1f µs against a %.1f µs layer", c.Name, c.FloorUs, c.Figures.LayerUs)
				}
			}
			// The demand counts what the layer posts.
			tr, _ := presets(t, "mini-gda")[0].Transport(preset.Options{LocalExperts: d.Channels()})
			res, err := moe.RunLayer(moe.LayerConfig{Routing: d.Routing, Mode: d.Mode, Transport: tr, Profile: d.Profile, NoPayload: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Dispatch.Messages != ops {
				t.Errorf("dispatch posts %d operations, the demand lists %d", res.Dispatch.Messages, ops)
			}
		})
	}
}

// Configurations of one class take exactly the same time: the queues they
// add carry nothing.
func TestSameClassSameRun(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("runs candidates one at a time; the studies cover the parallel runs under the race detector")
	}
	d := deployment(t, 16, 16, 16) // one local expert: every operation on channel 0
	disp, comb, _ := moe.Demands(d.Routing, d.Mode, false, moe.Background{})
	for _, tc := range []struct {
		preset string
		a, b   preset.Options
	}{
		{"mini-gda", preset.Options{QPsPerPeer: 1}, preset.Options{QPsPerPeer: 4}},
		{"dc", preset.Options{DCIs: 1}, preset.Options{DCIs: 16}},
		{"mini-proxy", preset.Options{Workers: 1, Rings: 1, Batch: 4}, preset.Options{Workers: 4, Rings: 4, Batch: 4}},
		{"mini-proxy", preset.Options{Workers: 1, Rings: 8, Batch: 16}, preset.Options{Workers: 2, Rings: 16, Batch: 16}},
	} {
		p := presets(t, tc.preset)[0]
		var class [2]string
		var res [2]*moe.Result
		for k, o := range []preset.Options{tc.a, tc.b} {
			tr, err := p.Transport(o)
			if err != nil {
				t.Fatal(err)
			}
			e := tr.(transport.Estimator)
			ed, _ := e.Estimate(disp, d.Profile)
			ec, _ := e.Estimate(comb, d.Profile)
			class[k] = ed.Class + "|" + ec.Class
			if ed.Class == "" || ec.Class == "" {
				t.Fatalf("%s %+v: no class", tc.preset, o)
			}
			if res[k], err = moe.RunLayer(moe.LayerConfig{Routing: d.Routing, Mode: d.Mode, Transport: tr, Profile: d.Profile, NoPayload: true}); err != nil {
				t.Fatal(err)
			}
		}
		if class[0] != class[1] {
			t.Errorf("%s %+v and %+v: classes differ:\n%s\n%s", tc.preset, tc.a, tc.b, class[0], class[1])
			continue
		}
		if res[0].Dispatch.Time != res[1].Dispatch.Time || res[0].Combine.Time != res[1].Combine.Time {
			t.Errorf("%s %+v and %+v share a class but run differently: %+v / %+v", tc.preset, tc.a, tc.b, res[0].Dispatch.Time, res[1].Dispatch.Time)
		}
	}
}

func find(t *testing.T, r *Result, name string) *Candidate {
	t.Helper()
	for i := range r.Candidates {
		if r.Candidates[i].Name == name {
			return &r.Candidates[i]
		}
	}
	t.Fatalf("no candidate %q", name)
	return nil
}

func study(t *testing.T, st *Study) *Result {
	t.Helper()
	cands, err := st.Run(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Finish(cands, st.Limits)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// DeepEP's one QP per local expert puts EP16 with eight local experts
// over a small context cache's knee; fewer QPs or DC win.
func TestOneQPPerLocalExpertOverTheKnee(t *testing.T) {
	t.Parallel()
	d := deployment(t, 16, 128, 8, "conn.entries=100")
	res := study(t, &Study{Deployment: d, Space: Space{Presets: presets(t, "mini-gda", "dc"), Knobs: map[string][]int{"qps-per-peer": {1, 2, 4, 8}, "dcis": {1, 8}}},
		Limits: Limits{Tolerance: 0.05}})
	perExpert := find(t, res, "mini-gda qps=8")
	if perExpert.Verdict != Rejected || !strings.Contains(perExpert.Reason, "over the knee: 120 active connections per NIC > the context cache's 100") {
		t.Fatalf("one QP per local expert: %s: %s", perExpert.Verdict, perExpert.Reason)
	}
	if perExpert.Figures != nil {
		t.Errorf("a candidate over the knee by its estimate was run")
	}
	if res.Recommended < 0 {
		t.Fatalf("no recommendation: %v", res.Reasons)
	}
	rec := res.Candidates[res.Recommended]
	if rec.Transport == "mini-gda" && rec.Knobs.Int("qps-per-peer") >= 8 {
		t.Errorf("recommended %s", rec.Name)
	}
	if rec.Resources.ActiveConnPerNIC > 100 {
		t.Errorf("recommended %s with %d active connections per NIC", rec.Name, rec.Resources.ActiveConnPerNIC)
	}
	if len(res.Reasons) == 0 || !strings.Contains(strings.Join(res.Reasons, "\n"), "knee of 100") {
		t.Errorf("reasons do not state the knee: %q", res.Reasons)
	}
}

// A buffer limit between what one and 32 QPs per peer need rejects the
// latter before it runs.
func TestBufferLimitRejects(t *testing.T) {
	t.Parallel()
	d := deployment(t, 16, 128, 8)
	space := Space{Presets: presets(t, "mini-gda"), Knobs: map[string][]int{"qps-per-peer": {1, 32}}}
	cands, err := Candidates(&d, space)
	if err != nil {
		t.Fatal(err)
	}
	st := &Study{Deployment: d, Space: space}
	if err := st.estimate(cands); err != nil {
		t.Fatal(err)
	}
	limit := cands[0].Resources.GPUBytes() + 1<<20
	st.Limits = Limits{MaxGPUBytes: limit, Tolerance: 0.05}
	res := study(t, st)
	big := find(t, res, "mini-gda qps=32")
	if big.Verdict != Rejected || big.Stage != StageRejected || !strings.HasPrefix(big.Reason, "over the limit of ") || !strings.Contains(big.Reason, "GiB of buffers per GPU") {
		t.Fatalf("32 QPs per peer: %s (%s): %s", big.Verdict, big.Stage, big.Reason)
	}
	if one := find(t, res, "mini-gda qps=1"); one.Verdict != Recommended {
		t.Fatalf("1 QP per peer: %s: %s", one.Verdict, one.Reason)
	}
}

// A target below every candidate's floor rejects them all without a run.
func TestTargetBelowTheFloorRunsNothing(t *testing.T) {
	t.Parallel()
	d := deployment(t, 16, 128, 8)
	res := study(t, &Study{Deployment: d, Space: Space{Presets: presets(t, "mini-gda", "dc", "mini-proxy")},
		Limits: Limits{TargetUs: 1}})
	if res.Runs != 0 || res.Recommended != -1 || len(res.Front) != 0 {
		t.Fatalf("runs %d, recommended %d, front %v", res.Runs, res.Recommended, res.Front)
	}
	for _, c := range res.Candidates {
		if !strings.HasPrefix(c.Reason, "misses the 1 µs target: at best") {
			t.Fatalf("%s: %s", c.Name, c.Reason)
		}
	}
}

// Shards merged give the unsharded result, byte for byte.
func TestShardsMergeToTheWhole(t *testing.T) {
	t.Parallel()
	d := deployment(t, 16, 16, 8)
	mk := func() *Study {
		return &Study{Deployment: d, Space: Space{Presets: presets(t, "mini-gda", "dc", "mini-proxy"), Knobs: map[string][]int{"workers": {1, 2}}},
			Limits: Limits{Tolerance: 0.05}, Jobs: 2}
	}
	enc := func(r *Result) []byte {
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(r); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	whole := enc(study(t, mk()))
	var all []Candidate
	for i := range 3 {
		c, err := mk().Run(i, 3)
		if err != nil {
			t.Fatal(err)
		}
		// Through JSON, as moebench merge reads them.
		var back []Candidate
		b, _ := json.Marshal(c)
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		all = append(all, back...)
	}
	merged, err := Finish(all, mk().Limits)
	if err != nil {
		t.Fatal(err)
	}
	if got := enc(merged); !bytes.Equal(got, whole) {
		t.Fatalf("merged shards differ from the whole:\n%s\n%s", got, whole)
	}
}

func TestPrune(t *testing.T) {
	t.Parallel()
	res := func(cores, qps int) Resources {
		return Resources{Host: map[string]int{"proxy cores/host": cores}, QPsPerNIC: qps, ConnKnee: 1000}
	}
	cands := []Candidate{
		{Index: 0, Name: "anchor", Stage: StageRun, Resources: res(0, 16), Figures: &Figures{LayerUs: 100, Correct: true}},
		{Index: 1, Name: "slow floor, more resources", Resources: res(8, 16), FloorUs: 150, FloorBy: "proxy_worker"},
		{Index: 2, Name: "slow floor, fewer QPs", Resources: res(0, 8), FloorUs: 150},
		{Index: 3, Name: "fast floor", Resources: res(8, 32), FloorUs: 90},
	}
	run := prune(cands, []int{0}, []int{1, 2, 3}, Limits{})
	if len(run) != 2 || run[0] != 2 || run[1] != 3 {
		t.Fatalf("run %v, want [2 3]", run)
	}
	if c := cands[1]; c.Stage != StagePruned || c.By != 0 || c.Reason != "at best 150 µs (proxy_worker floor), and anchor takes 100 µs with no more resources" {
		t.Fatalf("pruned: %+v", c)
	}
}

func TestFinishFrontAndTolerance(t *testing.T) {
	t.Parallel()
	mk := func(i int, name string, us float64, cores, qps int) Candidate {
		return Candidate{Index: i, Name: name, Stage: StageRun, RunBy: i, By: -1,
			Resources: Resources{Host: map[string]int{"proxy cores/host": cores}, QPsPerNIC: qps, ActiveConnPerNIC: qps, ConnKnee: 1000},
			Figures:   &Figures{LayerUs: us, Correct: true}}
	}
	cands := []Candidate{
		mk(0, "fast", 100, 0, 64),
		mk(1, "lean", 103, 0, 16),
		mk(2, "slow and big", 120, 8, 64),
		mk(3, "leanest but slow", 200, 0, 1),
		mk(4, "over the knee", 90, 0, 2000),
	}
	for _, tc := range []struct {
		tol  float64
		want string
	}{{0.05, "lean"}, {0.01, "fast"}, {1, "leanest but slow"}} {
		res, err := Finish(cands, Limits{Tolerance: tc.tol})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Candidates[res.Recommended].Name; got != tc.want {
			t.Errorf("tolerance %v: recommended %s, want %s", tc.tol, got, tc.want)
		}
		if len(res.Front) != 3 {
			t.Errorf("front %v, want fast, lean and leanest", res.Front)
		}
		if c := res.Candidates[2]; c.Verdict != Dominated || !strings.HasPrefix(c.Reason, "fast is faster (100 vs 120 µs) with less: proxy cores per host 0 vs 8") {
			t.Errorf("slow and big: %s: %s", c.Verdict, c.Reason)
		}
		if c := res.Candidates[4]; c.Verdict != Rejected || !strings.HasPrefix(c.Reason, "over the knee") {
			t.Errorf("over the knee: %s: %s", c.Verdict, c.Reason)
		}
	}
	if _, err := Finish(cands[1:], Limits{}); err == nil {
		t.Error("a missing candidate went unnoticed")
	}
}

// Figures that differ only past three digits keep the separators the
// others have.
func TestPairTellsApart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b float64
		x, y string
	}{
		{1793.06, 1793.13, "1,793.06", "1,793.13"},
		{1693, 1696, "1,693", "1,696"},
		{8328, 8328, "8,328", "8,328"},
		{12.345, 12.349, "12.345", "12.349"},
		{1234567.5, 1234567.25, "1,234,568", "1,234,567"},
		{-1500.25, -1500.5, "-1,500.2", "-1,500.5"},
		{0.5, 0.25, "0.5", "0.25"},
	} {
		if x, y := pair(tc.a, tc.b); x != tc.x || y != tc.y {
			t.Errorf("pair(%v, %v) = %s, %s; want %s, %s", tc.a, tc.b, x, y, tc.x, tc.y)
		}
	}
}

// Under reserved background a candidate keeps the layer's queues its
// knobs name and counts the reserved ones on top, in its name and its
// resources: RC one QP more per peer, DC one DCI more per NIC.
func TestReservedCandidatesCountTheirQueues(t *testing.T) {
	t.Parallel()
	d := deployment(t, 16, 256, 4)
	d.Background, d.BothQueues = moe.Background{CTAs: 2, Bytes: 8}, true
	st := &Study{Deployment: d, Space: Space{Presets: presets(t, "mini-gda", "dc"), Knobs: map[string][]int{"qps-per-peer": {1}, "dcis": {16}}}}
	cands, err := Candidates(&st.Deployment, st.Space)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.estimate(cands); err != nil {
		t.Fatal(err)
	}
	type row struct {
		name           string
		qps, dcis, own int
	}
	var got []row
	for _, c := range cands {
		got = append(got, row{c.Name, c.Resources.QPsPerNIC, c.Resources.Own["DCIs/NIC"], c.Resources.Own["reserved queues/NIC"]})
	}
	want := []row{
		{"mini-gda qps=1 shared", 16, 0, 0},
		{"mini-gda qps=1 +1 reserved", 32, 0, 16},
		{"dc dcis=16 shared", 16, 16, 0},
		{"dc dcis=16 +1 reserved", 17, 17, 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates\n got %v\nwant %v", got, want)
	}
}

// A limit a mechanism declares on a resource of its own rejects what
// holds more (mini-proxy's workers per GPU, --proxy-cores), and a
// negative one is refused.
func TestDeclaredLimit(t *testing.T) {
	t.Parallel()
	c := &Candidate{Resources: Resources{Own: map[string]int{"proxy workers": 4, "proxy rings": 8}}}
	if got, want := overLimit(c, Limits{Own: map[string]int{"proxy workers": 2}}, true), "over the limit of 2 proxy workers per GPU: 4"; got != want {
		t.Errorf("over the limit: %q, want %q", got, want)
	}
	for _, l := range []Limits{{}, {Own: map[string]int{"proxy workers": 4}}, {Own: map[string]int{"proxy rings": 1}}} {
		if got := overLimit(c, l, true); got != "" {
			t.Errorf("%+v: %q, want none (at the limit, or a kind without a declared limit)", l, got)
		}
	}
	if err := (Limits{Own: map[string]int{"proxy workers": -1}}).Validate(); err == nil || !strings.Contains(err.Error(), "proxy workers: -1") {
		t.Errorf("negative limit: %v", err)
	}
	if a, b := (Limits{Own: map[string]int{"proxy workers": 2}}), (Limits{Own: map[string]int{"proxy workers": 3}}); a.Equal(b) || !a.Equal(a) {
		t.Errorf("Equal: %+v and %+v", a, b)
	}
}
