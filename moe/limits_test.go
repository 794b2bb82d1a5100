package moe_test

import (
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport/preset"
)

// limitCase is a layer of shape s in mode on a preset, under that preset's
// library limits and the overrides over.
type limitCase struct {
	preset string
	s      moe.Shape
	mode   moe.Mode
	sets   []string
	over   []string
}

func (c limitCase) config(t *testing.T) (moe.LayerConfig, moe.Limits) {
	t.Helper()
	p, err := preset.Get(c.preset)
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := moe.Channels(c.s, c.mode, 0, moe.Background{})
	tr, err := p.Transport(preset.Options{LocalExperts: layer})
	if err != nil {
		t.Fatal(err)
	}
	prof := profile.MustLoad("p-ib")
	if err := prof.ApplySets(c.sets); err != nil {
		t.Fatal(err)
	}
	return moe.LayerConfig{Mode: c.mode, Transport: tr, Profile: prof, NVLink: c.mode == moe.Normal}, moe.Limits{Library: p.Limits, Over: c.over}
}

// DeepEP V1's own limits refuse a layer by name, with the figure it
// needs, the limit and where DeepEP states it; an override lets it by,
// and a preset without a library has none of them.
func TestPrecheckLibraryLimits(t *testing.T) {
	t.Parallel()
	// EP256 as 32 nodes of 8 GPUs, one expert each.
	ep := func(ranks int) moe.Shape { return layerShape(ranks, 8, ranks, 128, 7168) }
	wide := ep(16)
	wide.Hidden = 1 << 19
	// Normal mode's RDMA buffer across two nodes: 2 (send and receive) ×
	// 12 channels × 2 nodes × 128 tokens = 6,144 tokens' bytes, past
	// 2^31-1 once a token takes more than 349,525 B: at hidden 2^19 (a
	// token of at least 2^19 B).
	wideRDMA := int64(2*12*2*128) * int64(wide.NormalTokenBytes())
	topk12 := ep(16)
	topk12.TopK = 12
	for _, tc := range []struct {
		name   string
		c      limitCase
		want   string // the limit refused by; "" accepted
		need   int64
		source string // the commit its source names; "" DeepEP's
	}{
		{name: "normal mode at 160 ranks", c: limitCase{preset: "deepep-v1", s: ep(160), mode: moe.Normal}},
		{name: "normal mode at 168 ranks", c: limitCase{preset: "deepep-v1", s: ep(168), mode: moe.Normal}, want: "deepep-v1.normal_ranks", need: 168},
		{name: "normal mode at 256 ranks", c: limitCase{preset: "deepep-v1", s: ep(256), mode: moe.Normal}, want: "deepep-v1.normal_ranks", need: 256},
		{name: "over EFA too", c: limitCase{preset: "deepep-v1-efa", s: ep(256), mode: moe.Normal}, want: "deepep-v1.normal_ranks", need: 256},
		{name: "overridden", c: limitCase{preset: "deepep-v1", s: ep(256), mode: moe.Normal, over: []string{"deepep-v1.normal_ranks"}}},
		{name: "LL at 256 ranks", c: limitCase{preset: "deepep-v1", s: ep(256), mode: moe.LL}},
		{name: "no library", c: limitCase{preset: "mini-gda", s: ep(256), mode: moe.Normal}},
		{name: "LL top-12", c: limitCase{preset: "deepep-v1", s: topk12, mode: moe.LL}, want: "deepep-v1.ll_topk", need: 12},
		{name: "normal top-12", c: limitCase{preset: "deepep-v1", s: topk12, mode: moe.Normal}},
		{name: "RDMA buffer past an int", c: limitCase{preset: "deepep-v1", s: wide, mode: moe.Normal}, want: "deepep-v1.normal_rdma_bytes", need: wideRDMA},
		// UCCL-EP counts RDMA ranks over the host's GPUs.
		{name: "UCCL-EP at 20 nodes of 4", c: limitCase{preset: "uccl-ep", s: layerShape(80, 4, 80, 128, 7168), mode: moe.Normal}},
		{name: "UCCL-EP at 21 nodes of 4", c: limitCase{preset: "uccl-ep", s: layerShape(84, 4, 84, 128, 7168), mode: moe.Normal}, want: "uccl-ep.normal_nodes", need: 21, source: "UCCL-EP 038d61ac"},
		{name: "UCCL-EP at 32 nodes of 8", c: limitCase{preset: "uccl-ep", s: ep(256), mode: moe.Normal}, want: "uccl-ep.normal_nodes", need: 32, source: "UCCL-EP 038d61ac"},
		{name: "UCCL-EP LL at 32 nodes", c: limitCase{preset: "uccl-ep", s: ep(256), mode: moe.LL}},
		{name: "2048 experts a rank", c: limitCase{preset: "deepep-v1", s: layerShape(16, 8, 16*2048, 1, 512), mode: moe.Normal}, want: "deepep-v1.local_experts", need: 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, lim := tc.c.config(t)
			err := moe.PrecheckWith(tc.c.s, cfg, lim)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var le *moe.LimitError
			switch {
			case err == nil:
				t.Fatalf("accepted, want a refusal by %s", tc.want)
			case !errors.As(err, &le):
				t.Fatalf("error %v is not a LimitError", err)
			case !errors.Is(err, moe.ErrOverLimit) || !errors.Is(err, moe.ErrOverCapacity):
				t.Errorf("error %v is not ErrOverLimit and ErrOverCapacity", err)
			case le.Limit.Name != tc.want || le.Need != tc.need:
				t.Errorf("refused by %s needing %d, want %s needing %d", le.Limit.Name, le.Need, tc.want, tc.need)
			}
			commit, file := "DeepEP 567632dd", "csrc/"
			if tc.source != "" {
				commit, file = tc.source, "ep/include/ep_configs.cuh"
			}
			for _, s := range []string{tc.want, commit, file} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if tc.need < math.MaxInt32 && !strings.Contains(err.Error(), " "+strconv.FormatInt(tc.need, 10)+" ") {
				t.Errorf("error %q does not give the figure needed, %d", err, tc.need)
			}
			if err := moe.PrecheckWith(tc.c.s, cfg, moe.Limits{Library: lim.Library, Over: []string{tc.want}}); err != nil && strings.Contains(err.Error(), tc.want) {
				t.Errorf("overridden, still refused: %v", err)
			}
		})
	}
}

// The libraries' limits as their sources state them, on every preset that
// runs the library, on IB and EFA alike. DeepEP V1: its rank cap is
// NUM_MAX_NVL_PEERS (8) × NUM_MAX_RDMA_PEERS (20), its LL top-k
// kNumMaxTopK (11), its normal-mode RDMA buffer an int's bytes and its LL
// one 16 B units an int counts. UCCL-EP: NUM_MAX_RDMA_PEERS (20) nodes of
// however many GPUs the host has, an int's bytes of RDMA buffer and
// NUM_MAX_LOCAL_EXPERTS (1,024) experts a rank.
func TestLibraryLimitValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		presets []string
		want    map[string]int64
	}{
		{[]string{"deepep-v1", "deepep-v1-efa"}, map[string]int64{
			"deepep-v1.normal_ranks":      8 * 20,
			"deepep-v1.ll_topk":           11,
			"deepep-v1.normal_rdma_bytes": 1<<31 - 1,
			"deepep-v1.ll_rdma_bytes":     16*(1<<31-1) - 1,
			"deepep-v1.local_experts":     1024,
		}},
		{[]string{"uccl-ep", "uccl-ep-efa"}, map[string]int64{"uccl-ep.normal_nodes": 20, "uccl-ep.normal_rdma_bytes": 1<<31 - 1, "uccl-ep.local_experts": 1024}},
	} {
		for _, name := range c.presets {
			p, err := preset.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, l := range p.Limits {
				if err := l.Validate(); err != nil {
					t.Error(err)
				}
				got[l.Name] = l.Max
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("%s: limits %v, want %v", name, got, c.want)
			}
		}
	}
}

// Headroom gives every limit a layer is under with its figure: the LL
// buffer by DeepEP's formula plus the send queues against the GPU's memory
// less what the model keeps, the QPs against the NIC's, and the library's.
func TestHeadroom(t *testing.T) {
	t.Parallel()
	// 16 ranks of 2 experts, 8 tokens, hidden 512: DeepEP sizes a
	// dispatch message for BF16 or FP8, whichever is larger, after a 16 B
	// header: 16 + max(1,024, 512 + 4 scales × 4 B) = 1,040 B; a combine
	// one is 1,024 B. Send = max(8 × 1,040, 32 × 8 × 1,024), receive =
	// 32 × 8 × 1,040, signals 32 × 4 B, all doubled.
	s := layerShape(16, 8, 32, 8, 512)
	buffer := int64(2 * (32*8*1024 + 32*8*1040 + 32*4))
	// deepep-v1's LL QPs: one per destination local expert, 2 a peer,
	// 1,024 WQEs of 64 B each.
	queues := int64(16 * 2 * 1024 * 64)
	c := limitCase{preset: "deepep-v1", s: s, mode: moe.LL, sets: []string{"gpu.reserved_gb=100"}}
	cfg, lim := c.config(t)
	u, err := moe.Headroom(s, cfg, lim)
	if err != nil {
		t.Fatal(err)
	}
	want := []moe.Usage{
		{Name: "gpu.memory_gb", Used: buffer + queues, Limit: 41e9},
		{Name: "nic.max_qps", Used: 32, Limit: 131072},
		{Name: "nic.max_qp_wr", Used: 1024, Limit: 32768},
		{Name: "deepep-v1.ll_topk", Used: 4, Limit: 11},
		{Name: "deepep-v1.ll_rdma_bytes", Used: buffer, Limit: 16*(1<<31-1) - 1},
	}
	if len(u) != len(want) {
		t.Fatalf("headroom %+v, want %d limits", u, len(want))
	}
	for i, w := range want {
		g := u[i]
		if g.Name != w.Name || g.Used != w.Used || g.Limit != w.Limit || g.Over || g.Source == "" || g.What == "" {
			t.Errorf("limit %d: %+v, want %s %d of %d, not over, with its source", i, g, w.Name, w.Used, w.Limit)
		}
	}
	if !strings.Contains(u[0].Source, "gpu.reserved_gb = 100") {
		t.Errorf("memory's source %q does not say what the model keeps", u[0].Source)
	}
	// Over a limit only by override: marked.
	c = limitCase{preset: "deepep-v1", s: layerShape(256, 8, 256, 128, 7168), mode: moe.Normal, over: []string{"deepep-v1.normal_ranks"}}
	cfg, lim = c.config(t)
	if u, err = moe.Headroom(c.s, cfg, lim); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(u, func(u moe.Usage) bool { return u.Name == "deepep-v1.normal_ranks" })
	if i < 0 || !u[i].Over || u[i].Used != 256 || u[i].Limit != 160 {
		t.Errorf("headroom %+v: want deepep-v1.normal_ranks 256 of 160, over", u)
	}
}

// The GPU's memory less gpu.reserved_gb is what the layer's buffers get:
// a layer that fits the whole GPU is refused once the model keeps most
// of it, and runs over it when overridden.
func TestPrecheckReservedMemory(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 256, 128, 7168)
	for _, tc := range []struct {
		name string
		sets []string
		over []string
		msg  string
	}{
		{name: "the whole GPU"},
		{name: "140 GB kept", sets: []string{"gpu.reserved_gb=140"}, msg: "more than the GPU's 1.000 GB left"},
		{name: "140 GB kept, overridden", sets: []string{"gpu.reserved_gb=140"}, over: []string{"gpu.memory_gb"}},
		{name: "all of it kept", sets: []string{"gpu.reserved_gb=141"}, msg: "gpu.reserved_gb = 141"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, lim := limitCase{preset: "mini-gda", s: s, mode: moe.LL, sets: tc.sets, over: tc.over}.config(t)
			err := moe.PrecheckWith(s, cfg, lim)
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.msg != "" && err == nil:
				t.Fatalf("accepted, want a refusal saying %q", tc.msg)
			case tc.msg != "" && (!errors.Is(err, moe.ErrOverCapacity) || !strings.Contains(err.Error(), tc.msg)):
				t.Errorf("error %v: want ErrOverCapacity saying %q", err, tc.msg)
			}
		})
	}
}

// A queue deeper than the NIC's max_qp_wr is refused by that constant.
func TestPrecheckWorkRequests(t *testing.T) {
	t.Parallel()
	s := layerShape(16, 8, 32, 8, 512)
	cfg, lim := limitCase{preset: "mini-gda", s: s, mode: moe.LL, sets: []string{"nic.max_qp_wr=512"}}.config(t)
	err := moe.PrecheckWith(s, cfg, lim)
	if err == nil || !errors.Is(err, moe.ErrOverCapacity) || !strings.Contains(err.Error(), "1024 work requests per send queue") || !strings.Contains(err.Error(), "nic.max_qp_wr = 512") {
		t.Fatalf("error %v: want a refusal of 1024 work requests by nic.max_qp_wr = 512", err)
	}
	lim.Over = []string{"nic.max_qp_wr"}
	if err := moe.PrecheckWith(s, cfg, lim); err != nil {
		t.Fatalf("overridden, refused: %v", err)
	}
}
