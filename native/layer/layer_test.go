package layer

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"moebench/moe"
	"moebench/native"
	"moebench/profile"
	"moebench/transport"
	"moebench/transport/preset"
)

var h200 = native.DeviceInfo{Name: "NVIDIA H200", SMs: 132}

func route(t testing.TB, ranks, tokens, hidden, topk, experts int) *moe.Routing {
	t.Helper()
	s := moe.Shape{Experts: experts, TopK: topk, Hidden: hidden, Tokens: tokens, Ranks: ranks, GPUsPerNode: 1, Dispatch: moe.FP8, Combine: moe.BF16}
	rt, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func byName(t testing.TB, name string) Transport {
	t.Helper()
	tr, err := TransportByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Each preset's mechanism reaches the library as its own knobs.
func TestPlanPresets(t *testing.T) {
	t.Parallel()
	rt := route(t, 8, 128, 7168, 8, 288)
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, c native.LayerConfig)
	}{
		{"mini-gda", func(t *testing.T, c native.LayerConfig) {
			if c.Path != native.PathGDA || c.QPsPerPeer != 36 || c.Ordering != "gpu-fence" || c.PerDoorbell != 1 || c.SQBBs != 1024 || c.NICSMs != DefaultNICSMs {
				t.Errorf("%+v", c)
			}
		}},
		{"deepep-v1", func(t *testing.T, c native.LayerConfig) {
			if c.Path != native.PathGDA || c.Ordering != "release-gpu" || c.PerDoorbell != 4 {
				t.Errorf("%+v", c)
			}
		}},
		{"dc", func(t *testing.T, c native.LayerConfig) {
			if c.Path != native.PathDC || c.DCIs != 16 || c.SQBBs != 2048 {
				t.Errorf("%+v", c)
			}
		}},
		{"mini-proxy", func(t *testing.T, c native.LayerConfig) {
			if c.Path != native.PathProxy || c.Workers != 4 || c.Rings != 32 || c.Batch != 16 || c.Handoff != "baseline" || c.RingEntries != 1024 {
				t.Errorf("%+v", c)
			}
		}},
		{"nvshmem-ibrc", func(t *testing.T, c native.LayerConfig) {
			if c.Handoff != "fifo" || c.Workers != 1 {
				t.Errorf("%+v", c)
			}
		}},
		{"deepep-v2-efa", func(t *testing.T, c native.LayerConfig) {
			// DP Direct: two SRD queues per rank, every post rung after a
			// system-scope fence, EFA's queue depth.
			if c.Path != native.PathEFA || c.DCIs != 2 || c.Ordering != "fence-sys" || c.PerDoorbell != 1 || c.SQBBs != 4096 || c.NICSMs != DefaultNICSMs {
				t.Errorf("%+v", c)
			}
		}},
		{"direct", func(t *testing.T, c native.LayerConfig) {
			if c.Path != native.PathDirect || c.NICSMs != 0 || c.SMsPerRank != 16 {
				t.Errorf("%+v", c)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Plan(rt, byName(t, tc.name), Options{}, h200, moe.Background{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Ranks != 8 || c.GPUs != 1 || c.Reps != DefaultReps || c.Timeout != DefaultTimeout || !c.Verify || !c.FP8 {
				t.Errorf("defaults: %+v", c)
			}
			tc.check(t, c)
		})
	}
}

// SRD posted by a host proxy has no native path; reserved background
// over SRD has no queue of its own.
func TestPlanSRDRefusals(t *testing.T) {
	t.Parallel()
	rt := route(t, 4, 16, 7168, 8, 288)
	if _, err := Plan(rt, byName(t, "uccl-ep-efa"), Options{}, h200, moe.Background{}); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "posts SRD entries from the GPU") {
		t.Errorf("a proxy-posted SRD preset: %v", err)
	}
	// A mechanism's own knob reaches the plan through the options.
	tr := byName(t, "deepep-v2-efa")
	tr.Options = preset.OptionsOf(transport.Settings{"srd-qps": "8", "qps-per-peer": "4"})
	if c, err := Plan(rt, tr, Options{}, h200, moe.Background{}); err != nil || c.DCIs != 8 || c.QPsPerPeer != 0 {
		t.Errorf("--srd-qps 8: %d queues a rank, %d QPs a peer, %v", c.DCIs, c.QPsPerPeer, err)
	}
	bg := moe.Background{CTAs: 4, Bytes: 16, Reserved: true}
	if _, err := Plan(rt, byName(t, "deepep-v2-efa"), Options{}, h200, bg); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "reserved background over srd") {
		t.Errorf("reserved background: %v", err)
	}
}

// SMs: DeepEP's choice within what the GPU leaves; background takes its
// SMs and its posters; reserved proxy background gets queues of its own.
func TestPlanSMsAndBackground(t *testing.T) {
	t.Parallel()
	c, err := Plan(route(t, 2, 16, 7168, 8, 288), byName(t, "mini-gda"), Options{}, h200, moe.Background{})
	if err != nil || c.SMsPerRank != 64 {
		t.Fatalf("2 ranks: %d SMs each, %v", c.SMsPerRank, err)
	}
	c, err = Plan(route(t, 2, 16, 7168, 8, 288), byName(t, "mini-gda"), Options{SMsPerRank: 20}, h200, moe.Background{})
	if err != nil || c.SMsPerRank != 20 {
		t.Fatalf("--num-sms 20: %d SMs, %v", c.SMsPerRank, err)
	}
	bg := moe.Background{CTAs: 16, Bytes: 8, Reserved: true}
	c, err = Plan(route(t, 2, 16, 7168, 8, 288), byName(t, "mini-proxy"), Options{}, h200, bg)
	if err != nil {
		t.Fatal(err)
	}
	if c.BackgroundSMs != DefaultBgSMs || c.BgWarps != 64 || c.BgBytes != 16 || c.BgChannel0 != 144 || c.BgChannels != 1 ||
		c.ReservedRing0 != 32 || c.Rings != 33 || c.SMsPerRank != (132-4-4)/2 || c.BgHeadUs != 200 {
		t.Fatalf("%+v", c)
	}
	// Reserved GDA background: a QP per peer past the layer's.
	c, err = Plan(route(t, 2, 16, 7168, 8, 288), byName(t, "mini-gda"), Options{}, h200, bg)
	if err != nil || c.QPsPerPeer != 145 || c.BgChannel0 != 144 {
		t.Fatalf("mini-gda, reserved background: %+v, %v", c, err)
	}
}

func TestPlanErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rt   *moe.Routing
		tr   string
		o    Options
		bg   moe.Background
	}{
		{"too many SMs", route(t, 8, 16, 7168, 8, 288), "mini-gda", Options{SMsPerRank: 17}, moe.Background{}},
		{"uneven GPUs", route(t, 8, 16, 7168, 8, 288), "mini-gda", Options{GPUs: 3}, moe.Background{}},
		{"message size", route(t, 2, 16, 2880, 8, 32), "mini-gda", Options{}, moe.Background{}},
		{"background alone", route(t, 1, 16, 7168, 8, 8), "mini-gda", Options{}, moe.Background{CTAs: 4, Bytes: 64}},
		{"ranks over SMs", route(t, 129, 4, 1024, 4, 129), "mini-gda", Options{}, moe.Background{}},
		{"dc reserved background", route(t, 2, 16, 7168, 8, 288), "dc", Options{}, moe.Background{CTAs: 16, Bytes: 8, Reserved: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Plan(tc.rt, byName(t, tc.tr), tc.o, h200, tc.bg); !errors.Is(err, ErrPlan) {
				t.Fatalf("err = %v, want ErrPlan", err)
			}
		})
	}
}

// Normal mode: the direct path, DeepEP's SMs where the GPU has room (8
// virtual ranks leave 16 each), its intranode chunk and buffer; and every
// way to ask for what it cannot run.
func TestPlanNormal(t *testing.T) {
	t.Parallel()
	direct := Transport{Direct: true}
	c, err := Plan(route(t, 8, 512, 7168, 8, 288), direct, Options{Mode: moe.Normal}, h200, moe.Background{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Normal || c.Path != native.PathDirect || c.SMsPerRank != 16 || c.Chunk != DefaultNormalChunk || c.BufTokens != DefaultBufTokens || c.NICSMs != 0 {
		t.Fatalf("8 ranks: %+v", c)
	}
	c, err = Plan(route(t, 2, 512, 7168, 8, 288), direct, Options{Mode: moe.Normal, Chunk: 12}, h200, moe.Background{})
	if err != nil || c.SMsPerRank != moe.DefaultNormalSMs || c.Chunk != 12 {
		t.Fatalf("2 ranks, chunk 12: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		name string
		rt   *moe.Routing
		tr   Transport
		o    Options
		bg   moe.Background
	}{
		{"through a NIC", route(t, 2, 16, 7168, 8, 288), byName(t, "mini-gda"), Options{Mode: moe.Normal}, moe.Background{}},
		{"background", route(t, 2, 16, 7168, 8, 288), direct, Options{Mode: moe.Normal}, moe.Background{CTAs: 4, Bytes: 64}},
		{"odd SMs", route(t, 2, 16, 7168, 8, 288), direct, Options{Mode: moe.Normal, SMsPerRank: 7}, moe.Background{}},
		{"too many SMs", route(t, 8, 16, 7168, 8, 288), direct, Options{Mode: moe.Normal, SMsPerRank: 18}, moe.Background{}},
		{"more ranks than NVLink peers", route(t, 16, 16, 7168, 8, 288), direct, Options{Mode: moe.Normal}, moe.Background{}},
		{"chunk over half the buffer", route(t, 2, 16, 7168, 8, 288), direct, Options{Mode: moe.Normal, Chunk: 200}, moe.Background{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Plan(tc.rt, tc.tr, tc.o, h200, tc.bg); !errors.Is(err, ErrPlan) {
				t.Fatalf("err = %v, want ErrPlan", err)
			}
		})
	}
}

// DeepEP's normal-mode byte count: what each rank receives in dispatch,
// what it gets back in combine.
func TestNormalBytes(t *testing.T) {
	t.Parallel()
	rt := route(t, 4, 64, 7168, 8, 32)
	d, c := NormalBytes(rt)
	n := rt.Normal()
	var sumD, sumC, pairs int64
	for i := range d {
		sumD += d[i]
		sumC += c[i]
	}
	for _, k := range n.TokensPerRank {
		pairs += int64(k)
	}
	if pairs == 0 || sumD != pairs*(7168+56*4) || sumC != pairs*7168*2 {
		t.Fatalf("dispatch %d B, combine %d B over %d (token, rank) pairs", sumD, sumC, pairs)
	}
}

// The flat routing pads each rank to max tokens and carries the oracle.
func TestFlatten(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 8, TopK: 2, Hidden: 128, Tokens: 3, Ranks: 2, GPUsPerNode: 1, Dispatch: moe.FP8, Combine: moe.BF16}
	rt, err := moe.FromTopk(s, [][]int64{{0, 5, 2, -1}, {7, 1, 3, 4, 6, 0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := Flatten(rt)
	want := []int32{0, 5, 2, -1, -1, -1, 7, 1, 3, 4, 6, 0}
	for i, v := range want {
		if f.TopK[i] != v {
			t.Fatalf("ids %v, want %v", f.TopK, want)
		}
	}
	if f.TokensPerRank[0] != 2 || f.TokensPerRank[1] != 3 || len(f.Expected) != 16 || f.Expected[5] != 1 || f.Expected[8+4] != 1 {
		t.Fatalf("tokens %v expected %v", f.TokensPerRank, f.Expected)
	}
	if f.Weights[2] != 1 || f.Weights[0] != 0.5 {
		t.Fatalf("weights %v", f.Weights)
	}
}

// The emulated profile makes the NIC the NIC warps, shares the GPU.
func TestEmulatedProfile(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	q, err := EmulatedProfile(p, native.LayerConfig{Ranks: 8, GPUs: 1, NICSMs: 4})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"emunic.engines": 128, "emunic.ranks_per_gpu": 8, "pcie.dma_read_ns": p.Get("emunic.wqe_ns"),
		"fabric.latency_ns": p.Get("emunic.latency_ns"), "link.gbps": 1e5, "nvlink.latency_ns": p.Get("nvlink.latency_ns")} {
		if got := q.Get(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if p.Get("emunic.engines") != 0 {
		t.Error("the base profile changed")
	}
	q, err = EmulatedProfile(p, native.LayerConfig{Ranks: 4, GPUs: 1, NICSMs: 2, Pace: true, LineGBs: 24.8, MsgMps: 100})
	if err != nil || math.Abs(q.Get("link.gbps")-198.4) > 1e-9 || q.Get("nic.msg_rate_mps") != 100 {
		t.Fatalf("paced: link %v msg %v, %v", q.Get("link.gbps"), q.Get("nic.msg_rate_mps"), err)
	}
}

// The model of a native run has the run's ranks per GPU, SMs and path.
func TestPredict(t *testing.T) {
	t.Parallel()
	rt := route(t, 4, 16, 2048, 4, 32)
	p := profile.MustLoad("p-ib")
	// deepep-v2-efa on P-IB: the emulated NIC runs SRD entries whatever
	// the host's adapters.
	for _, name := range []string{"direct", "mini-gda", "mini-proxy", "dc", "deepep-v2-efa"} {
		tr := byName(t, name)
		cfg, err := Plan(rt, tr, Options{}, h200, moe.Background{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Predict(rt, cfg, 1, tr, p, moe.Background{}, zap.NewNop())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.Correct || res.NumSMs != cfg.SMsPerRank || !(res.Dispatch.Time.Mean > 0) {
			t.Errorf("%s: correct %v, %d SMs (want %d), dispatch %v", name, res.Correct, res.NumSMs, cfg.SMsPerRank, res.Dispatch.Time.Mean)
		}
		if direct := name == "direct"; direct != (res.Dispatch.NVLinkBytes > 0) || direct == (res.Dispatch.ScaleOutBytes > 0) {
			t.Errorf("%s: NVLink %d B, scale-out %d B", name, res.Dispatch.NVLinkBytes, res.Dispatch.ScaleOutBytes)
		}
	}
}

// Measure and Fit on a fake library whose "measurements" are the model's
// own at known constants: the fit, started elsewhere, reproduces them.
func TestFitReproduces(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a model through dozens of runs")
	}
	t.Parallel()
	truth := profile.MustLoad("p-ib")
	for name, v := range map[string]float64{"kernel.cast_ns": 1200, "kernel.grid_sync_ns": 900, "kernel.recv_token_ns": 600,
		"kernel.reduce_token_ns": 1500, "gpu.warp_copy_ns": 800, "emunic.wqe_ns": 900, "emunic.copy_ns": 700, "emunic.warp_gbs": 4} {
		if err := truth.SetValue(name, v, "test"); err != nil {
			t.Fatal(err)
		}
	}
	grid := []GridPoint{
		{Transport: "direct", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 4, Tokens: 32, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "mini-gda", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "mini-gda", Ranks: 4, Tokens: 32, Hidden: 1024, TopK: 4, Experts: 16},
	}
	res := fitBack(t, &modelLib{p: truth}, grid)
	for _, c := range res.After {
		d, m := c.Error()
		if math.Abs(d) > 0.05 || math.Abs(m) > 0.05 {
			t.Errorf("%s %d ranks × %d tokens: dispatch off by %.1f%%, combine by %.1f%%", c.Run.Point.Transport, c.Run.Point.Ranks,
				c.Run.Point.Tokens, 100*d, 100*m)
		}
	}
	if len(res.Constants) == 0 || res.Constants[0].Source != "test" {
		t.Fatalf("constants %v", res.Constants)
	}
}

// Compare models the runs on every core at once; each comparison is the
// one a lone compareOne makes. Fit's tests cover the figures, at length;
// this is the quick one the race detector runs.
func TestCompareInParallel(t *testing.T) {
	t.Parallel()
	grid := []GridPoint{
		{Transport: "direct", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "mini-gda", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "mini-proxy", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
		{Transport: "dc", Ranks: 2, Tokens: 8, Hidden: 1024, TopK: 4, Experts: 16},
	}
	p := profile.MustLoad("p-ib")
	raw, err := Measure(&modelLib{p: p}, grid, Options{Reps: 1, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Compare(raw, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(raw.Runs) {
		t.Fatalf("%d comparisons of %d runs", len(got), len(raw.Runs))
	}
	for i, run := range raw.Runs {
		want, err := compareOne(raw, run, p)
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Errorf("run %d (%s): %+v in parallel, %+v alone", i, run.Point.Transport, got[i], want)
		}
		if d, c := want.Error(); math.Abs(d) > 1e-9 || math.Abs(c) > 1e-9 {
			t.Errorf("run %d (%s): the model against its own times is off by %g and %g", i, run.Point.Transport, d, c)
		}
	}
}

// fitBack measures grid on lib (the model on a truth profile) and fits
// P-IB to it.
func fitBack(t *testing.T, lib *modelLib, grid []GridPoint) *FitResult {
	t.Helper()
	raw, err := Measure(lib, grid, Options{Reps: 1, Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Fit(raw, profile.MustLoad("p-ib"), "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// modelLib answers Layer with the model's own prediction, as measured
// times: what the fit must reproduce.
type modelLib struct {
	p    *profile.Profile
	gpus int // 0: one
}

func (l *modelLib) Device() native.DeviceInfo { return h200 }
func (l *modelLib) NCCLAllToAll(native.A2AConfig) (native.A2AResult, error) {
	return native.A2AResult{}, errors.New("the model has no NCCL")
}
func (l *modelLib) DeviceCount() (int, error) { return max(1, l.gpus), nil }
func (l *modelLib) Layer(c native.LayerConfig, rt native.LayerRouting) (native.LayerResult, error) {
	s := moe.Shape{Experts: c.Experts, TopK: c.TopK, Hidden: c.Hidden, Tokens: c.Tokens, Ranks: c.Ranks, GPUsPerNode: 1, Dispatch: moe.FP8, Combine: moe.BF16}
	idx := make([][]int64, c.Ranks)
	for r := range idx {
		for _, e := range rt.TopK[r*c.Tokens*c.TopK : (r+1)*c.Tokens*c.TopK] {
			idx[r] = append(idx[r], int64(e))
		}
	}
	routing, err := moe.FromTopk(s, idx, nil)
	if err != nil {
		return native.LayerResult{}, err
	}
	tr := Transport{Direct: c.Path == native.PathDirect}
	if !tr.Direct {
		name := map[native.LayerPath]string{native.PathGDA: "mini-gda", native.PathProxy: "mini-proxy", native.PathDC: "dc"}[c.Path]
		if tr.Preset, err = preset.Get(name); err != nil {
			return native.LayerResult{}, err
		}
	}
	res, err := Predict(routing, c, c.Workers, tr, l.p, moe.Background{}, zap.NewNop())
	if err != nil {
		return native.LayerResult{}, err
	}
	out := native.LayerResult{Workers: c.Workers, Times: make([][2][]native.RankPhase, c.Reps)}
	for rep := range out.Times {
		for ph, p := range []*moe.Phase{&res.Dispatch, &res.Combine} {
			row := make([]native.RankPhase, c.Ranks)
			for r, rt := range p.Ranks {
				row[r] = native.RankPhase{ReadyNs: rt.Ready.Us() * 1e3, IssueDoneNs: rt.IssueDone.Us() * 1e3, WaitDoneNs: rt.LastDelivered.Us() * 1e3}
			}
			out.Times[rep][ph] = row
		}
	}
	return out, nil
}

// Raw measurements of one GPU merge; of another GPU or routing, they do not.
func TestRawMerge(t *testing.T) {
	t.Parallel()
	a := &Raw{Device: h200, Routing: "uniform", Seed: 1, Runs: []RawRun{{Point: GridPoint{Transport: "direct", Ranks: 2}}}}
	b := &Raw{Device: h200, Routing: "uniform", Seed: 1, Host: "host", Runs: []RawRun{{Point: GridPoint{Transport: "direct", Ranks: 4, Normal: true}}}}
	m, err := a.Merge(b)
	if err != nil || len(m.Runs) != 2 || len(a.Runs) != 1 || m.Host != "host" || !m.Runs[1].Point.Normal {
		t.Fatalf("merge: %+v, %v", m, err)
	}
	other := *b
	other.Device.Name = "NVIDIA B200"
	if _, err := a.Merge(&other); err == nil {
		t.Error("merged runs of two GPUs")
	}
	other = *b
	other.Seed = 2
	if _, err := a.Merge(&other); err == nil {
		t.Error("merged runs of two routings")
	}
}

// Normal mode's grid runs the direct path only and names its points so.
func TestNormalGrid(t *testing.T) {
	t.Parallel()
	g := NormalGrid()
	if len(g) != 8 {
		t.Fatalf("%d normal points", len(g))
	}
	for _, p := range g {
		if !p.Normal || p.Transport != "direct" || !strings.HasPrefix(p.Name(), "normal direct") {
			t.Errorf("%+v: %s", p, p.Name())
		}
	}
	if n := len(DefaultGrid(1)); n != len(LowLatencyGrid())+len(g) {
		t.Errorf("the default grid has %d points on one GPU", n)
	}
	multi := MultiGPUGrid(2)
	if n := len(DefaultGrid(2)); n != len(LowLatencyGrid())+len(g)+len(multi) || len(multi) != 4 || MultiGPUGrid(1) != nil {
		t.Errorf("the default grid has %d points on two GPUs, %d across them", n, len(multi))
	}
	for _, p := range multi {
		if p.GPUs != 2 || p.Ranks != 2 || p.Transport != "direct" || !strings.HasSuffix(p.Name(), "on 2 GPUs") {
			t.Errorf("%+v: %s", p, p.Name())
		}
	}
}

// The all-to-all's bytes are the layer's: LL per (token, expert) message,
// normal mode per (token, rank), combine the reverse of dispatch.
func TestA2ABytes(t *testing.T) {
	t.Parallel()
	for _, normal := range []bool{false, true} {
		rt := route(t, 4, 64, 7168, 8, 32)
		d, c := A2ABytes(rt, normal)
		s := rt.Shape
		var sd, sc int64
		for i := range d {
			for j := range d[i] {
				sd += d[i][j]
				sc += c[i][j]
				if (d[i][j] == 0) != (c[j][i] == 0) {
					t.Errorf("normal %v: %d→%d carries %d B in dispatch, %d→%d %d B in combine", normal, i, j, d[i][j], j, i, c[j][i])
				}
			}
		}
		var want, wantC int64
		if normal {
			for _, k := range rt.Normal().TokensPerRank {
				want += int64(k) * int64(7168+56*4)
				wantC += int64(k) * 7168 * 2
			}
		} else {
			sel := int64(rt.Selections())
			want, wantC = sel*int64(s.LLDispatchBytes()), sel*int64(s.LLCombineBytes())
		}
		if sd != want || sc != wantC {
			t.Errorf("normal %v: %d and %d B, want %d and %d", normal, sd, sc, want, wantC)
		}
	}
}

// NCCL runs one rank per GPU.
func TestRunNCCLNeedsOneRankPerGPU(t *testing.T) {
	t.Parallel()
	rt := route(t, 4, 16, 7168, 8, 32)
	for _, tc := range []struct {
		gpus int
		msg  string
	}{
		{1, "virtual-ranks: nccl-a2a runs one rank per GPU: 4 ranks on 1 GPU (give gpus alone)"},
		{4, "gpus 4: this host has 1 GPU"},
	} {
		_, err := RunNCCL(&modelLib{}, rt, Options{GPUs: tc.gpus}, "")
		if !errors.Is(err, ErrPlan) || !strings.HasSuffix(err.Error(), tc.msg) {
			t.Errorf("--gpus %d: %v, want %q", tc.gpus, err, tc.msg)
		}
	}
}

// Across GPUs the fit finds NVLink's rate and latency the runs were made
// with, and leaves the single-GPU constants alone.
func TestFitNVLink(t *testing.T) {
	if testing.Short() {
		t.Skip("fits a model through dozens of runs")
	}
	t.Parallel()
	truth := profile.MustLoad("p-ib")
	for name, v := range map[string]float64{"nvlink.gbs": 300, "nvlink.warp_gbs": 20, "nvlink.latency_ns": 1500, "nvlink.copy_ns": 400} {
		if err := truth.SetValue(name, v, "test"); err != nil {
			t.Fatal(err)
		}
	}
	grid := []GridPoint{
		{Transport: "direct", Ranks: 2, GPUs: 2, Tokens: 16, Hidden: 2048, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 2, GPUs: 2, Tokens: 128, Hidden: 2048, TopK: 4, Experts: 16},
		{Transport: "direct", Ranks: 2, GPUs: 2, Tokens: 512, Hidden: 2048, TopK: 4, Experts: 16, Normal: true},
		{Transport: "direct", Ranks: 2, GPUs: 2, Tokens: 2048, Hidden: 2048, TopK: 4, Experts: 16, Normal: true},
	}
	res := fitBack(t, &modelLib{p: truth, gpus: 2}, grid)
	// Normal mode's chunked copies make the surface rough: the fit lands
	// within a few percent, the link's rate (what binds) within 5%.
	for _, c := range res.After {
		d, m := c.Error()
		if math.Abs(d) > 0.08 || math.Abs(m) > 0.08 {
			t.Errorf("%s: dispatch off by %.1f%%, combine by %.1f%%", c.Run.Point.Name(), 100*d, 100*m)
		}
	}
	for _, c := range res.Constants {
		if !strings.HasPrefix(c.Name, "nvlink.") {
			t.Errorf("fitted %s from runs across GPUs only", c.Name)
		}
		if c.Name == "nvlink.gbs" && math.Abs(c.Value/300-1) > 0.05 {
			t.Errorf("nvlink.gbs fitted to %v, the runs were made at 300", c.Value)
		}
	}
}

func TestGrid(t *testing.T) {
	for _, c := range []struct {
		name string
		gpus int
		n    int // runs; 0: refused
	}{
		{"ll", 1, len(LowLatencyGrid())},
		{"normal", 1, len(NormalGrid())},
		{"transfer", 1, len(TransferGrid())},
		{"all", 1, len(LowLatencyGrid()) + len(NormalGrid())},
		// Two LL and two normal-mode runs across the GPUs.
		{"all", 8, len(LowLatencyGrid()) + len(NormalGrid()) + 4},
		{"gpus", 8, 4},
		{"gpus", 1, 0},
		{"none", 8, 0},
	} {
		g, err := Grid(c.name, c.gpus)
		if c.n == 0 {
			if !errors.Is(err, ErrGrid) || !strings.HasPrefix(err.Error(), "grid "+c.name) {
				t.Errorf("Grid(%s, %d) = %v, want ErrGrid naming it", c.name, c.gpus, err)
			}
			continue
		}
		if err != nil || len(g) != c.n {
			t.Errorf("Grid(%s, %d): %d runs, %v; want %d", c.name, c.gpus, len(g), err, c.n)
		}
	}
}
