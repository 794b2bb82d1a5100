package moe_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport/preset"
)

// layerShape is small enough to run in milliseconds and still cross nodes.
func layerShape(ranks, perNode, experts, tokens, hidden int) moe.Shape {
	return moe.Shape{Experts: experts, TopK: 4, Hidden: hidden, Tokens: tokens, Ranks: ranks, GPUsPerNode: perNode, Dispatch: moe.FP8, Combine: moe.BF16}
}

func runLayer(t testing.TB, s moe.Shape, mode moe.Mode, presetName string, o preset.Options, bg moe.Background, nvlink bool) *moe.Result {
	t.Helper()
	res, err := moe.RunLayer(layerConfig(t, s, mode, presetName, o, bg, nvlink))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// layerConfig is runLayer's configuration: routing seed 7 on P-IB.
func layerConfig(t testing.TB, s moe.Shape, mode moe.Mode, presetName string, o preset.Options, bg moe.Background, nvlink bool) moe.LayerConfig {
	t.Helper()
	r, err := moe.Generate(s, moe.RoutingSpec{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	p, err := preset.Get(presetName)
	if err != nil {
		t.Fatal(err)
	}
	layer, reserved := moe.Channels(s, mode, 0, bg)
	if o.LocalExperts == 0 {
		o.LocalExperts = layer
	}
	if reserved > 0 {
		o.QPsPerPeer = max(o.QPsPerPeer, layer) + reserved
	}
	tr, err := p.Transport(o)
	if err != nil {
		t.Fatal(err)
	}
	return moe.LayerConfig{Routing: r, Mode: mode, Transport: tr, Profile: profile.MustLoad("p-ib"), NVLink: nvlink, Background: bg}
}

func TestLayerIsCorrectAndConsistent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mode   moe.Mode
		preset string
		nvlink bool
	}{
		{"ll mini-gda", moe.LL, "mini-gda", false},
		{"ll deepep-v1 nvlink", moe.LL, "deepep-v1", true},
		{"ll dc", moe.LL, "dc", false},
		{"normal mini-gda", moe.Normal, "mini-gda", true},
		// Across nodes normal mode always forwards over NVLink; on one
		// node it can run over the NIC alone.
		{"normal nvshmem-ibgda one node rdma only", moe.Normal, "nvshmem-ibgda", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			perNode := 4
			if tc.mode == moe.Normal && !tc.nvlink {
				perNode = 8
			}
			res := runLayer(t, layerShape(8, perNode, 32, 24, 1024), tc.mode, tc.preset, preset.Options{}, moe.Background{}, tc.nvlink)
			if !res.Correct {
				t.Fatalf("%d problems: %v", res.ProblemCount, res.Problems)
			}
			for _, ph := range []*moe.Phase{&res.Dispatch, &res.Combine} {
				if ph.Time.Mean <= 0 || ph.Time.Min > ph.Time.P50 || ph.Time.P50 > ph.Time.Max || ph.Time.P99 > ph.Time.Max {
					t.Errorf("summary out of order: %+v", ph.Time)
				}
				if ph.IssueDone.Max > ph.Time.Max {
					t.Errorf("issuing ended at %v µs, after the phase (%v µs)", ph.IssueDone.Max, ph.Time.Max)
				}
				if got := ph.Breakdown.Total(); math.Abs(got-ph.Time.Mean) > 1e-6*ph.Time.Mean+1e-6 {
					t.Errorf("breakdown sums to %v µs, phase mean is %v µs", got, ph.Time.Mean)
				}
				if ph.BoundBy == "" || ph.AlgoGBps <= 0 || ph.Messages == 0 {
					t.Errorf("bound by %q, %v GB/s, %d messages", ph.BoundBy, ph.AlgoGBps, ph.Messages)
				}
				if tc.nvlink && ph.NVLinkBytes == 0 || !tc.nvlink && ph.NVLinkBytes != 0 {
					t.Errorf("nvlink %v but %d NVLink bytes", tc.nvlink, ph.NVLinkBytes)
				}
			}
			if tc.mode == moe.LL {
				for r, rt := range res.Dispatch.Ranks {
					if rt.LastDelivered > rt.Ready {
						t.Errorf("rank %d ready at %v before its last delivery at %v", r, rt.Ready, rt.LastDelivered)
					}
				}
			}
		})
	}
}

func TestLayerIsDeterministic(t *testing.T) {
	t.Parallel()
	s := layerShape(8, 4, 32, 16, 1024)
	a := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{CTAs: 4, Bytes: 8}, false)
	b := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{CTAs: 4, Bytes: 8}, false)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs with one seed differ:\n%+v\n%+v", a.Dispatch.Time, b.Dispatch.Time)
	}
}

// Dispatch and combine in turn give what they give side by side, in LL
// and in normal mode, across nodes and on one.
func TestLayerInTurnIsTheSame(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode    moe.Mode
		perNode int
	}{{moe.LL, 8}, {moe.Normal, 8}, {moe.Normal, 16}} {
		presets := []string{"mini-gda", "mini-proxy", "dc"}
		if raceOn {
			// The goroutines are the same on every transport, and LL's
			// have race tests of their own.
			if tc.mode == moe.LL {
				continue
			}
			presets = presets[:1]
		}
		for _, p := range presets {
			cfg := layerConfig(t, layerShape(16, tc.perNode, 64, 32, 1024), tc.mode, p, preset.Options{}, moe.Background{CTAs: 4, Bytes: 8}, true)
			a, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.InTurn = true
			b, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%v, %d a node, %s: in turn differs from side by side:\n%+v\n%+v", tc.mode, tc.perNode, p, a.Combine.Time, b.Combine.Time)
			}
		}
	}
}

// A shared queue under background load slows dispatch much more than a
// reserved one (the paper's Fig. 6 direction), in a latency-bound shape.
func TestSharedQueueSlowsDispatchMoreThanReserved(t *testing.T) {
	t.Parallel()
	s := layerShape(8, 4, 32, 16, 1024)
	s.TopK = 8
	none := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false).Dispatch.Time.Mean
	shared := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{CTAs: 64, Bytes: 8}, false).Dispatch.Time.Mean
	reserved := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{CTAs: 64, Bytes: 8, Reserved: true}, false).Dispatch.Time.Mean
	t.Logf("dispatch µs: none %.2f, shared %.2f, reserved %.2f", none, shared, reserved)
	if !(shared-none > 3*(reserved-none)) || shared <= none {
		t.Fatalf("shared queues cost %.2f µs, reserved %.2f µs: want shared well above reserved", shared-none, reserved-none)
	}
}

// Background traffic loads the NIC's queues, so it stays on the NIC even
// to peers NVLink reaches: beside a one-node normal-mode layer, which
// moves everything over NVLink, it leaves the layer's times as they are
// without it (over NVLink it had taken 0.4 ns writes, hundreds of millions
// of events, and the NVLink port's time).
func TestBackgroundStaysOnTheNIC(t *testing.T) {
	t.Parallel()
	s := layerShape(8, 8, 64, 32, 1024)
	bg := moe.Background{CTAs: 4, Bytes: 8, Reserved: true}
	for _, tr := range []string{"mini-gda", "dc"} {
		none := runLayer(t, s, moe.Normal, tr, preset.Options{}, moe.Background{}, true)
		with := runLayer(t, s, moe.Normal, tr, preset.Options{}, bg, true)
		if with.Dispatch.Background == 0 || with.Combine.Background == 0 {
			t.Fatalf("%s: background writes delivered: %d in dispatch, %d in combine", tr, with.Dispatch.Background, with.Combine.Background)
		}
		if with.Dispatch.Time != none.Dispatch.Time || with.Combine.Time != none.Combine.Time {
			t.Errorf("%s: with NIC background dispatch %+v, combine %+v; without %+v, %+v",
				tr, with.Dispatch.Time, with.Combine.Time, none.Dispatch.Time, none.Combine.Time)
		}
	}
}

// A layer on one node with NVLink on never touches a NIC (normal mode runs
// DeepEP's intranode kernels; LL's peers are all NVLink peers), so every
// transport gives the same times and holds no connection active.
func TestOneNodeOverNVLinkIsTheSameOnEveryTransport(t *testing.T) {
	t.Parallel()
	s := layerShape(8, 8, 64, 32, 1024)
	for _, mode := range []moe.Mode{moe.Normal, moe.LL} {
		want := runLayer(t, s, mode, "mini-gda", preset.Options{}, moe.Background{}, true)
		for _, tr := range []string{"mini-gda", "dc", "mini-proxy"} {
			got := runLayer(t, s, mode, tr, preset.Options{}, moe.Background{}, true)
			if got.Dispatch.Time != want.Dispatch.Time || got.Combine.Time != want.Combine.Time {
				t.Errorf("%v on %s: dispatch %+v, combine %+v; on mini-gda %+v, %+v",
					mode, tr, got.Dispatch.Time, got.Combine.Time, want.Dispatch.Time, want.Combine.Time)
			}
			if n := got.Resources.ActiveConnPerNIC; n != 0 {
				t.Errorf("%v on %s: %d active connections per NIC, with nothing through a NIC", mode, tr, n)
			}
		}
	}
}

// A proxy ring shared with background traffic slows a small (decode-like)
// dispatch by an order of magnitude; a reserved ring keeps it near idle.
func TestSharedProxyRingCollapsesReservedDoesNot(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 4, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	bg := moe.Background{CTAs: 64, Bytes: 8}
	none := runLayer(t, s, moe.LL, "mini-proxy", preset.Options{}, moe.Background{}, false).Dispatch.Time.Mean
	shared := runLayer(t, s, moe.LL, "mini-proxy", preset.Options{}, bg, false).Dispatch.Time.Mean
	bg.Reserved = true
	reserved := runLayer(t, s, moe.LL, "mini-proxy", preset.Options{}, bg, false).Dispatch.Time.Mean
	t.Logf("dispatch µs: none %.1f, shared ring %.1f, reserved ring %.1f", none, shared, reserved)
	if shared < 5*none || reserved > 2*none {
		t.Fatalf("shared %.1f µs and reserved %.1f µs against %.1f idle: want the shared ring far slower, the reserved near idle", shared, reserved, none)
	}
}

// DC re-targets a DCI on every change of destination: one DCI whose
// destination changes token by token is slower than a pool that keeps
// per-destination bursts.
func TestDCWithOneDCIIsSlowerThanWithBursts(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 64, 32, 1024)
	one := runLayer(t, s, moe.LL, "dc-1dci", preset.Options{}, moe.Background{}, false)
	pool := runLayer(t, s, moe.LL, "dc", preset.Options{}, moe.Background{}, false)
	t.Logf("dispatch µs: 1 DCI %.1f, 16 DCIs %.1f", one.Dispatch.Time.Mean, pool.Dispatch.Time.Mean)
	if one.Dispatch.Time.Mean <= 1.5*pool.Dispatch.Time.Mean {
		t.Fatalf("one DCI %.1f µs vs a pool %.1f µs: per-token re-targeting should cost more", one.Dispatch.Time.Mean, pool.Dispatch.Time.Mean)
	}
}

// More QPs per peer × peers past the NIC's connection knee slows the
// all-to-all.
func TestConnectionsPastTheKneeSlowAllToAll(t *testing.T) {
	t.Parallel()
	knee := moe.ConnKnee(profile.MustLoad("p-ib"))
	if knee == 0 {
		t.Skip("profile p-ib has no connection knee (conn.knee_connections / conn.entries): the NIC has no connection-context model yet")
	}
	// 32 ranks × 64 local experts = 2,048 connections per NIC with one QP
	// per expert, against 32 with one QP per peer.
	s := layerShape(32, 8, 2048, 16, 1024)
	few := runLayer(t, s, moe.LL, "mini-gda", preset.Options{LocalExperts: 1, QPsPerPeer: 1}, moe.Background{}, false)
	many := runLayer(t, s, moe.LL, "mini-gda", preset.Options{LocalExperts: 64}, moe.Background{}, false)
	t.Logf("knee %d; dispatch %.1f µs at %d conns/NIC, %.1f µs at %d", knee, few.Dispatch.Time.Mean, few.Resources.ActiveConnPerNIC,
		many.Dispatch.Time.Mean, many.Resources.ActiveConnPerNIC)
	if many.Resources.ActiveConnPerNIC <= knee || few.Resources.ActiveConnPerNIC >= knee {
		t.Fatalf("active connections %d and %d do not straddle the knee %d", few.Resources.ActiveConnPerNIC, many.Resources.ActiveConnPerNIC, knee)
	}
	if many.Combine.Time.Mean <= few.Combine.Time.Mean {
		t.Fatalf("combine past the knee (%d conns) took %.1f µs, not more than %.1f µs below it", many.Resources.ActiveConnPerNIC,
			many.Combine.Time.Mean, few.Combine.Time.Mean)
	}
}

func TestLayerRejectsBadConfig(t *testing.T) {
	t.Parallel()
	s := layerShape(4, 2, 8, 600, 1024)
	r, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := preset.Get("deepep-v1")
	tr, _ := p.Transport(preset.Options{LocalExperts: 2})
	prof := profile.MustLoad("p-ib")
	_, err = moe.RunLayer(moe.LayerConfig{Routing: r, Mode: moe.LL, Transport: tr, Profile: prof})
	if !errors.Is(err, moe.ErrQueueDepth) || !strings.Contains(err.Error(), "tokens: QP depth too small") || !strings.Contains(err.Error(), "1202 in flight per QP at 600 tokens (DeepEP asserts this: its send path never polls completions); at most 511 fit") {
		t.Errorf("600 tokens on 1,024-deep queues: %v, want a QP depth error about the tokens field", err)
	}
	for _, tc := range []struct {
		cfg  moe.LayerConfig
		want string
	}{
		{moe.LayerConfig{Routing: r, Mode: moe.LL, Profile: prof}, "transport"},
		{moe.LayerConfig{Routing: r, Transport: tr, Profile: prof}, "mode"},
		{moe.LayerConfig{Routing: r, Mode: moe.LL, Transport: tr, Profile: prof, NumSMs: 5000}, "num-sms"},
		{moe.LayerConfig{Routing: r, Mode: moe.LL, Transport: tr, Profile: prof, Background: moe.Background{CTAs: 2}}, "background"},
	} {
		if _, err := moe.RunLayer(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one naming %q", tc.cfg, err, tc.want)
		}
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]moe.Mode{"ll": moe.LL, "LL": moe.LL, " low-latency ": moe.LL, "normal": moe.Normal, "ht": moe.Normal} {
		if got, err := moe.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := moe.ParseMode("fast"); err == nil {
		t.Error("ParseMode(fast): no error")
	}
}

func TestLLBufferBytesMatchesDeepEPHint(t *testing.T) {
	t.Parallel()
	// DeepEP's size hint at 128 tokens, hidden 7,168, 16 ranks, 256
	// experts: 2 × (send + recv + signal), slots of 14,352 B.
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	send := int64(256 * 128 * 14336)
	recv := int64(256 * 128 * 14352)
	if got, want := moe.LLBufferBytes(s), 2*(send+recv+256*4); got != want {
		t.Fatalf("LLBufferBytes = %d, want %d", got, want)
	}
}

// The 1,024-rank target: LL dispatch + combine, one expert per rank.
// MOEBENCH_SCALE=1 runs it (about 30 s on two cores today).
func TestLayer1024Ranks(t *testing.T) {
	if os.Getenv("MOEBENCH_SCALE") == "" {
		t.Skip("set MOEBENCH_SCALE=1 to run the 1,024-rank layer")
	}
	s := moe.Shape{Experts: 1024, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 1024, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	res := runLayer(t, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
	t.Logf("dispatch %.1f µs, combine %.1f µs, %d messages, %d events", res.Dispatch.Time.Mean, res.Combine.Time.Mean,
		res.Dispatch.Messages+res.Combine.Messages, res.Events)
}

func ExampleRunLayer() {
	s := moe.Shape{Experts: 16, TopK: 2, Hidden: 512, Tokens: 8, Ranks: 4, GPUsPerNode: 2, Dispatch: moe.FP8, Combine: moe.BF16}
	r, _ := moe.Generate(s, moe.RoutingSpec{}, 1)
	p, _ := preset.Get("mini-gda")
	tr, _ := p.Transport(preset.Options{LocalExperts: s.LocalExperts()})
	res, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: moe.LL, Transport: tr, Profile: profile.MustLoad("p-ib")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("dispatch messages:", res.Dispatch.Messages, "combine messages:", res.Combine.Messages)
	// Output: dispatch messages: 103 combine messages: 103
}

// BenchmarkLayerLL runs the default EP16 deepseek-v3 LL layer and reports
// the transport messages simulated per second.
func BenchmarkLayerLL(b *testing.B) {
	b.ReportAllocs()
	s := moe.Shape{Experts: 256, TopK: 8, Hidden: 7168, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
	var msgs int64
	for b.Loop() {
		res := runLayer(b, s, moe.LL, "mini-gda", preset.Options{}, moe.Background{}, false)
		msgs += res.Dispatch.Messages + res.Combine.Messages
	}
	b.ReportMetric(float64(msgs)/b.Elapsed().Seconds(), "msgs/s")
}

// Normal mode with several ranks on one GPU (the native engine's virtual
// ranks) is still correct, and its copies, those into the other ranks'
// buffers included, share that GPU's one copy bandwidth: a slower GPU
// slows 4 ranks on one more than ranks on GPUs of their own, and the warp
// costs of copies between ranks of one GPU matter only when ranks share.
func TestNormalRanksSharingAGPU(t *testing.T) {
	t.Parallel()
	s := layerShape(4, 4, 32, 512, 2048)
	r, err := moe.Generate(s, moe.RoutingSpec{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	p, err := preset.Get("mini-gda")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := p.Transport(preset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	with := func(name string, v float64) *profile.Profile {
		p := profile.MustLoad("p-ib").Clone()
		if err := p.SetValue(name, v, "test"); err != nil {
			t.Fatal(err)
		}
		return p
	}
	slow, slowWarp := with("gpu.copy_gbs", 20), with("gpu.peer_warp_gbs", 0.5)
	time := func(prof *profile.Profile, per int) float64 {
		res, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: moe.Normal, Transport: tr, Profile: prof, NVLink: true, RanksPerGPU: per})
		if err != nil {
			t.Fatal(err)
		}
		if res.ProblemCount != 0 {
			t.Fatalf("%d ranks per GPU: %v", per, res.Problems)
		}
		return res.Dispatch.Time.Mean + res.Combine.Time.Mean
	}
	fast := profile.MustLoad("p-ib")
	shared, own := time(slow, 4)/time(fast, 4), time(slow, 1)/time(fast, 1)
	t.Logf("20 GB/s of copy bandwidth: 4 ranks on a GPU %.2fx, one rank per GPU %.2fx", shared, own)
	if !(shared > 1.5 && shared > own) {
		t.Errorf("20 GB/s of copy bandwidth slows 4 ranks on a GPU %.2fx, ranks on GPUs of their own %.2fx", shared, own)
	}
	if a, b := time(fast, 4), time(slowWarp, 4); !(b > a) {
		t.Errorf("4 ranks on a GPU: %.1f µs with slow warps between them, %.1f µs at the profile's", b, a)
	}
	if a, b := time(fast, 1), time(slowWarp, 1); a != b {
		t.Errorf("one rank per GPU: %.1f µs with slow warps between ranks of a GPU, %.1f µs at the profile's", b, a)
	}
}
