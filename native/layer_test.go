package native

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"moebench/moe"
)

// layerRouting flattens a routing for the library.
func layerRouting(t testing.TB, rt *moe.Routing) LayerRouting {
	t.Helper()
	s := rt.Shape
	out := LayerRouting{
		TokensPerRank: make([]int32, s.Ranks),
		TopK:          make([]int32, s.Ranks*s.Tokens*s.TopK),
		Weights:       make([]float32, s.Ranks*s.Tokens*s.TopK),
		Expected:      make([]int32, s.Ranks*s.Physical()),
	}
	for i := range out.TopK {
		out.TopK[i] = -1
	}
	for r := range s.Ranks {
		out.TokensPerRank[r] = int32(rt.Tokens[r])
		copy(out.TopK[r*s.Tokens*s.TopK:], rt.Idx[r])
		copy(out.Weights[r*s.Tokens*s.TopK:], rt.Weights[r])
	}
	copy(out.Expected, rt.LL().Counts)
	return out
}

func smallShape(ranks, tokens, hidden, topk, experts int) moe.Shape {
	return moe.Shape{Experts: experts, TopK: topk, Hidden: hidden, Tokens: tokens, Ranks: ranks, GPUsPerNode: 1,
		Dispatch: moe.FP8, Combine: moe.BF16}
}

func baseLayerConfig(s moe.Shape, path LayerPath) LayerConfig {
	return LayerConfig{
		Path: path, Ranks: s.Ranks, GPUs: 1, Tokens: s.Tokens, Hidden: s.Hidden, TopK: s.TopK, Experts: s.Physical(),
		FP8: s.Dispatch == moe.FP8, SMsPerRank: 8, NICSMs: 2, QPsPerPeer: s.LocalExperts(), SQBBs: 1024,
		Ordering: "gpu-fence", PerDoorbell: 1, DCIs: 16, Workers: 1, Rings: 8, Batch: 16, Handoff: "baseline",
		RingEntries: 1024, Warmup: 1, Reps: 3, Verify: true, Timeout: 3 * time.Second,
	}
}

// phaseMeans is the mean over repetitions and ranks of a phase's ready
// and issue-done times, µs.
func phaseMeans(r LayerResult, ph int) (ready, issue, wait float64) {
	n := 0
	for _, rep := range r.Times {
		for _, x := range rep[ph] {
			ready += x.ReadyNs / 1e3
			issue += x.IssueDoneNs / 1e3
			wait += x.WaitDoneNs / 1e3
			n++
		}
	}
	if n == 0 {
		return 0, 0, 0
	}
	return ready / float64(n), issue / float64(n), wait / float64(n)
}

func runLayer(t *testing.T, lib *Lib, s moe.Shape, cfg LayerConfig) LayerResult {
	t.Helper()
	rt, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := lib.Layer(cfg, layerRouting(t, rt))
	if err != nil {
		t.Fatalf("%s: %v", cfg.Path, err)
	}
	sel := rt.Selections()
	if want := int64((cfg.Warmup + cfg.Reps) * (sel + s.Ranks*s.Tokens)); cfg.Verify && res.Checked != want {
		t.Errorf("%s: checked %d deliveries and tokens, want %d", cfg.Path, res.Checked, want)
	}
	for _, rep := range res.Times {
		for ph := range 2 {
			for rank, x := range rep[ph] {
				if !(x.ReadyNs > 0) || x.ReadyNs < x.SendDoneNs || math.IsNaN(x.ReadyNs) {
					t.Errorf("%s phase %d rank %d: ready %.0f ns, send done %.0f ns", cfg.Path, ph, rank, x.ReadyNs, x.SendDoneNs)
				}
			}
		}
	}
	d, di, dw := phaseMeans(res, 0)
	c, ci, cw := phaseMeans(res, 1)
	t.Logf("%-10s R=%d T=%d H=%d k=%d E=%d S=%d: dispatch %.1f µs (issue %.1f, wait %.1f), combine %.1f µs (issue %.1f, wait %.1f); "+
		"wqes %d doorbells %d torn %d switches %d descriptors %d, G=%d wpg=%d workers %d, setup %.0f ms run %.0f ms",
		cfg.Path, s.Ranks, s.Tokens, s.Hidden, s.TopK, s.Physical(), cfg.SMsPerRank, d, di, dw, c, ci, cw,
		res.WQEs, res.Doorbells, res.Torn, res.DCISwitches, res.Descriptors, res.WarpGroups, res.WarpsPerGroup, res.Workers,
		res.SetupMs, res.RunMs)
	return res
}

// Every path moves every token exactly once, on small and DeepSeek-sized
// shapes, with FP8 and BF16 dispatch.
func TestLayerPaths(t *testing.T) {
	lib := openGPU(t)
	for _, path := range []LayerPath{PathDirect, PathGDA, PathProxy, PathDC} {
		t.Run(path.String(), func(t *testing.T) {
			s := smallShape(2, 16, 1024, 4, 16)
			runLayer(t, lib, s, baseLayerConfig(s, path))
			s.Dispatch = moe.BF16
			runLayer(t, lib, s, baseLayerConfig(s, path))
			s = smallShape(4, 32, 7168, 8, 64)
			cfg := baseLayerConfig(s, path)
			cfg.SMsPerRank = 16
			runLayer(t, lib, s, cfg)
			// More ranks than selections: the hit counts' host copy is
			// sized by the selections, not the device buffer.
			s = smallShape(8, 16, 1024, 2, 16)
			runLayer(t, lib, s, baseLayerConfig(s, path))
		})
	}
}

// The grid the model is calibrated on: virtual ranks {2, 4, 8} x tokens
// {16, 128} on DeepSeek-V3's shape (288 experts, top-8, hidden 7,168).
func TestLayerGrid(t *testing.T) {
	lib := openGPU(t)
	sms := lib.Device().SMs
	type row struct {
		path         LayerPath
		ranks, toks  int
		disp, comb   float64
		dIssue, cIss float64
	}
	var rows []row
	for _, path := range []LayerPath{PathDirect, PathGDA, PathProxy, PathDC} {
		for _, ranks := range []int{2, 4, 8} {
			for _, toks := range []int{16, 128} {
				s := smallShape(ranks, toks, 7168, 8, 288)
				cfg := baseLayerConfig(s, path)
				cfg.NICSMs = 4
				cfg.SMsPerRank = min(96, (sms-cfg.NICSMs)/ranks)
				cfg.Reps, cfg.Warmup = 5, 2
				cfg.Workers = 4
				cfg.Rings = 32
				res := runLayer(t, lib, s, cfg)
				d, di, _ := phaseMeans(res, 0)
				c, ci, _ := phaseMeans(res, 1)
				rows = append(rows, row{path, ranks, toks, d, c, di, ci})
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %5s %6s %10s %10s %10s %10s\n", "path", "ranks", "tokens", "disp µs", "comb µs", "d issue", "c issue")
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].path < rows[j].path })
	for _, r := range rows {
		fmt.Fprintf(&b, "%-10s %5d %6d %10.1f %10.1f %10.1f %10.1f\n", r.path, r.ranks, r.toks, r.disp, r.comb, r.dIssue, r.cIss)
	}
	t.Logf("grid:\n%s", b.String())
}

// Ordering costs show in the measured issue-done time; background load on
// a shared proxy ring shows in the layer time, reserved rings isolate it.
func TestLayerMechanisms(t *testing.T) {
	lib := openGPU(t)
	s := smallShape(4, 32, 7168, 8, 288)
	for _, ord := range []string{"gpu-fence", "release-gpu", "fence-sys", "release-sys"} {
		cfg := baseLayerConfig(s, PathGDA)
		cfg.Ordering = ord
		cfg.SMsPerRank, cfg.NICSMs = 24, 4
		res := runLayer(t, lib, s, cfg)
		_, di, _ := phaseMeans(res, 0)
		t.Logf("ordering %-12s dispatch issue done %.1f µs", ord, di)
	}
	for _, reserved := range []bool{false, true} {
		cfg := baseLayerConfig(s, PathProxy)
		cfg.SMsPerRank, cfg.NICSMs, cfg.BackgroundSMs = 24, 4, 4
		cfg.Workers, cfg.Rings = 2, 8
		cfg.BgWarps, cfg.BgBytes, cfg.BgChannels, cfg.BgHeadUs = 16, 65536, 1, 200
		if reserved {
			cfg.Rings = 9
			cfg.BgChannel0 = 8
		}
		res := runLayer(t, lib, s, cfg)
		d, _, _ := phaseMeans(res, 0)
		t.Logf("proxy background reserved=%v: dispatch %.1f µs, %d background posts", reserved, d, res.BgPosts)
	}
}

// Bad configurations fail with ErrBadArgument before anything runs.
func TestLayerBadConfig(t *testing.T) {
	lib := openGPU(t)
	s := smallShape(2, 16, 1024, 4, 16)
	rt, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	lr := layerRouting(t, rt)
	for name, mut := range map[string]func(*LayerConfig){
		"too many SMs":    func(c *LayerConfig) { c.SMsPerRank = 1000 },
		"no NIC":          func(c *LayerConfig) { c.Path, c.NICSMs = PathGDA, 0 },
		"ordering none":   func(c *LayerConfig) { c.Path, c.Ordering = PathGDA, "none" },
		"ranks over gpus": func(c *LayerConfig) { c.GPUs = 3 },
		"odd message":     func(c *LayerConfig) { c.Hidden = 1000 },
	} {
		cfg := baseLayerConfig(s, PathDirect)
		mut(&cfg)
		if _, err := lib.Layer(cfg, lr); !errors.Is(err, ErrBadArgument) {
			t.Errorf("%s: err = %v, want ErrBadArgument", name, err)
		}
	}
}

// Without the library every layer call says how to build it.
func TestLayerConfigCheck(t *testing.T) {
	t.Parallel()
	s := smallShape(2, 16, 1024, 4, 16)
	rt, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	lr := layerRouting(t, rt)
	cfg := baseLayerConfig(s, PathGDA)
	if err := cfg.check(lr); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	lr.TopK = lr.TopK[1:]
	if err := cfg.check(lr); !errors.Is(err, ErrBadArgument) || !strings.Contains(err.Error(), "ids") {
		t.Fatalf("short routing: %v", err)
	}
	cfg.GPUs = 3
	if err := cfg.check(layerRouting(t, rt)); !errors.Is(err, ErrBadArgument) {
		t.Fatalf("uneven GPUs: %v", err)
	}
}

// With several GPUs, ranks spread over them (peer access, system-scope
// ordering) and every path still moves every token exactly once.
func TestLayerMultiGPU(t *testing.T) {
	lib := openGPU(t)
	n, err := lib.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Skipf("needs 2 GPUs, this host has %d: skipping the multi-GPU layer", n)
	}
	for _, path := range []LayerPath{PathDirect, PathGDA, PathProxy, PathDC} {
		for _, perGPU := range []int{1, 2} {
			s := smallShape(2*perGPU, 32, 7168, 8, 64)
			cfg := baseLayerConfig(s, path)
			cfg.GPUs, cfg.SMsPerRank = 2, 16
			runLayer(t, lib, s, cfg)
		}
	}
}

// Normal mode moves every token once to each rank holding one of its
// experts, through ring buffers small enough to wrap many times and as
// large as DeepEP's, and combines each token from those ranks in order.
func TestLayerNormal(t *testing.T) {
	lib := openGPU(t)
	n, err := lib.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                      string
		s                         moe.Shape
		gpus, sms, chunk, bufToks int
	}{
		{"2 ranks fp8, wrapping rings", smallShape(2, 64, 1024, 4, 16), 1, 4, 2, 8},
		{"2 ranks bf16", func() moe.Shape { s := smallShape(2, 64, 1024, 4, 16); s.Dispatch = moe.BF16; return s }(), 1, 4, 3, 16},
		{"3 ranks, uneven warps", smallShape(3, 100, 2048, 6, 24), 1, 6, 6, 32},
		{"8 ranks deepseek", smallShape(8, 512, 7168, 8, 64), 1, 16, 6, 256},
		{"2 GPUs x 2 ranks", smallShape(4, 256, 7168, 8, 64), 2, 16, 6, 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gpus > n {
				t.Skipf("needs %d GPUs, this host has %d", tc.gpus, n)
			}
			rt, err := moe.Generate(tc.s, moe.RoutingSpec{}, 1)
			if err != nil {
				t.Fatal(err)
			}
			cfg := baseLayerConfig(tc.s, PathDirect)
			cfg.Normal, cfg.GPUs, cfg.SMsPerRank, cfg.Chunk, cfg.BufTokens = true, tc.gpus, tc.sms, tc.chunk, tc.bufToks
			cfg.NICSMs = 0
			res, err := lib.Layer(cfg, layerRouting(t, rt))
			if err != nil {
				t.Fatal(err)
			}
			var pairs, tokens int64
			for _, n := range rt.Tokens {
				tokens += int64(n)
			}
			nl := rt.Normal()
			for _, k := range nl.TokensPerRank {
				pairs += int64(k)
			}
			if want := int64(cfg.Warmup+cfg.Reps) * (pairs + tokens); res.Checked != want {
				t.Errorf("checked %d rows and tokens, want %d", res.Checked, want)
			}
			if res.WarpGroups != tc.sms/2 {
				t.Errorf("%d channels, want %d", res.WarpGroups, tc.sms/2)
			}
			d, _, dw := phaseMeans(res, 0)
			c, _, cw := phaseMeans(res, 1)
			t.Logf("normal R=%d GPUs=%d T=%d H=%d: dispatch %.1f µs (wait %.1f), combine %.1f µs (wait %.1f), setup %.0f ms",
				tc.s.Ranks, tc.gpus, tc.s.Tokens, tc.s.Hidden, d, dw, c, cw, res.SetupMs)
		})
	}
}

// NCCL's all-to-all runs over this host's GPUs (one rank each) when NCCL
// can be loaded: $MOEBENCH_NCCL_LIB, or libnccl.so.2 on the loader's path.
func TestNCCLAllToAll(t *testing.T) {
	lib := openGPU(t)
	n, err := lib.DeviceCount()
	if err != nil {
		t.Fatal(err)
	}
	bytes := make([][]int64, n)
	for s := range bytes {
		bytes[s] = make([]int64, n)
		for d := range bytes[s] {
			bytes[s][d] = 1 << 20
		}
	}
	res, err := lib.NCCLAllToAll(A2AConfig{Bytes: bytes, Warmup: 2, Reps: 5, Lib: os.Getenv("MOEBENCH_NCCL_LIB")})
	if err != nil && strings.Contains(err.Error(), "cannot load") {
		t.Skipf("no NCCL on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !(res.MeanUs > 0) || res.MinUs > res.MeanUs || res.MaxUs < res.MeanUs || res.Version < 20700 {
		t.Fatalf("%+v", res)
	}
	t.Logf("NCCL %d (%s), %d GPUs, 1 MiB per pair: %.1f µs (%.1f-%.1f)", res.Version, res.Lib, n, res.MeanUs, res.MinUs, res.MaxUs)
	if _, err := lib.NCCLAllToAll(A2AConfig{Bytes: [][]int64{{1, 2}}, Reps: 1}); !errors.Is(err, ErrBadArgument) {
		t.Errorf("a ragged byte matrix: %v", err)
	}
}
