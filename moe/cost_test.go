package moe_test

import (
	"math"
	"sync/atomic"
	"testing"

	"moebench/moe"
	"moebench/transport/preset"
	"moebench/transport/profile"
	"moebench/workloads"
)

// The estimate grows with every term and does not overflow on shapes far
// beyond any machine.
func TestEstimateCost(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 256, TopK: 8, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Hidden: 7168, Dispatch: moe.FP8, Combine: moe.BF16}
	base := moe.EstimateCost(s, moe.Queues{QPs: 1024})
	// moebench run --transport mini-gda at these defaults peaks near 41 MiB.
	if base.Bytes < 35<<20 || base.Bytes > 60<<20 {
		t.Errorf("default layer: %d MiB", base.Bytes>>20)
	}
	if base.Messages != 2*(16*128*8+16*256) {
		t.Errorf("messages %d", base.Messages)
	}
	more := s
	more.Tokens *= 8
	if c := moe.EstimateCost(more, moe.Queues{QPs: 1024}); c.Bytes <= base.Bytes {
		t.Errorf("8× tokens: %d B, not above %d B", c.Bytes, base.Bytes)
	}
	if c := moe.EstimateCost(s, moe.Queues{QPs: 1024, Rings: 1 << 20}); c.Bytes < base.Bytes+1<<30 {
		t.Errorf("a million rings: %d B", c.Bytes)
	}
	huge := moe.Shape{Experts: 1 << 20, TopK: 8, Tokens: 1 << 20, Ranks: 1 << 20}
	// A 2,048-rank layer over RC peaks at 3.46 GiB side by side and 1.73
	// GiB in turn (measured); the estimate stays within 0.85x to 1.2x of
	// both.
	ep := moe.Shape{Experts: 2048, TopK: 8, Tokens: 128, Ranks: 2048, GPUsPerNode: 8, Hidden: 7168, Dispatch: moe.FP8, Combine: moe.BF16}
	c := moe.EstimateCost(ep, moe.Queues{QPs: 4 * 2048 * 2048})
	if gib := float64(c.Bytes) / (1 << 30); gib < 0.85*3.46 || gib > 1.2*3.46 {
		t.Errorf("EP2048 side by side: %.2f GiB, measured 3.46 GiB", gib)
	}
	if gib := float64(c.InTurn) / (1 << 30); gib < 0.85*1.73 || gib > 1.2*1.73 {
		t.Errorf("EP2048 in turn: %.2f GiB, measured 1.73 GiB", gib)
	}
	// Peaks measured on a 2-core VM (moebench run, RSS): the estimate must
	// not fall below them, nor be more than 1.7x them.
	for _, m := range []struct {
		name       string
		ranks, tok int
		q          moe.Queues
		inTurn     bool
		mib        float64
	}{
		// Many tokens a rank: selections, not pairs, dominate.
		{"LL 256 ranks, 1,024 tokens, mini-gda", 256, 1024, moe.Queues{QPs: 4 * 256 * 256}, false, 617},
		{"LL 256 ranks, 1,024 tokens, mini-proxy", 256, 1024, moe.Queues{QPs: 4 * 256 * 256, Rings: 64 * 256, Proxy: true}, false, 1097},
		{"LL 1,024 ranks, mini-proxy", 1024, 128, moe.Queues{QPs: 4 * 1024 * 1024, Rings: 64 * 1024, Proxy: true}, false, 1161},
		{"LL 1,024 ranks, mini-proxy, in turn", 1024, 128, moe.Queues{QPs: 4 * 1024 * 1024, Rings: 64 * 1024, Proxy: true}, true, 605},
		{"LL 2,048 ranks, mini-proxy", 2048, 128, moe.Queues{QPs: 4 * 2048 * 2048, Rings: 64 * 2048, Proxy: true}, false, 3888},
		// Normal mode side by side (p-roce, 24 channels).
		{"normal 128 ranks, 4,096 tokens, mini-gda", 128, 4096, moe.Queues{QPs: 24 * 128 * 128}, false, 659},
	} {
		s := moe.Shape{Experts: max(256, m.ranks), TopK: 8, Tokens: m.tok, Ranks: m.ranks, GPUsPerNode: 8, Hidden: 7168, Dispatch: moe.FP8, Combine: moe.BF16}
		c := moe.EstimateCost(s, m.q)
		est := c.Bytes
		if m.inTurn {
			est = c.InTurn
		}
		if r := float64(est) / (m.mib * (1 << 20)); r < 1 || r > 1.7 {
			t.Errorf("%s: estimate %.0f MiB is %.2fx the measured %.0f MiB", m.name, float64(est)/(1<<20), r, m.mib)
		}
	}
	if c := moe.EstimateCost(huge, moe.Queues{QPs: 1 << 62, Rings: 1 << 62}); c.Bytes <= 0 || c.InTurn <= 0 || c.Messages <= 0 {
		t.Errorf("overflowed: %+v", c)
	}
}

// A run reports its deliveries as it goes, never more than the estimate.
func TestLayerProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   moe.Mode
		tokens int
	}{
		{moe.LL, 256}, {moe.Normal, 256},
		// Counts and flags, one per (rank, expert), outnumber the tokens.
		{moe.LL, 2},
	} {
		mode := tc.mode
		s := moe.Shape{Experts: 64, TopK: 4, Hidden: 1024, Tokens: tc.tokens, Ranks: 16, GPUsPerNode: 8, Dispatch: moe.FP8, Combine: moe.BF16}
		r, err := moe.Generate(s, moe.RoutingSpec{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := preset.Get("mini-gda")
		layer, _ := moe.Channels(s, mode, 0, moe.Background{})
		tr, err := p.Transport(preset.Options{LocalExperts: layer})
		if err != nil {
			t.Fatal(err)
		}
		var calls, got atomic.Int64 // dispatch and combine report side by side
		_, err = moe.RunLayer(moe.LayerConfig{Routing: r, Mode: mode, Transport: tr, Profile: profile.MustLoad("p-ib"), NoPayload: true, NVLink: mode == moe.Normal,
			Progress: func(n int) { calls.Add(1); got.Add(int64(n)) }})
		if err != nil {
			t.Fatal(err)
		}
		est := moe.EstimateCost(s, moe.Queues{}).Messages
		// Normal mode sends few, large messages: it may report none here.
		if (mode == moe.LL && calls.Load() < 2) || got.Load() > est {
			t.Errorf("%v: %d reports of %d messages, estimate %d", mode, calls.Load(), got.Load(), est)
		}
	}
}

// With background traffic the critical path still sums to the phase time
// it explains (the background's head start before the kernels is no part
// of it), and bound-by names the largest cause.
func TestBreakdownSumsUnderBackground(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode   moe.Mode
		preset string
		bg     string
	}{
		{moe.LL, "mini-gda", "bulk:8:shared"},
		{moe.LL, "mini-proxy", "bulk:8:reserved"},
		{moe.LL, "dc", "bulk:8:shared"},
		{moe.Normal, "mini-gda", "bulk:8:shared"},
	} {
		bg, err := workloads.ParseBackground(tc.bg)
		if err != nil {
			t.Fatal(err)
		}
		s := moe.Shape{Experts: 32, TopK: 4, Hidden: 1024, Tokens: 8, Ranks: 8, GPUsPerNode: 4, Dispatch: moe.FP8, Combine: moe.BF16}
		r, err := moe.Generate(s, moe.RoutingSpec{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := preset.Get(tc.preset)
		layer, reserved := moe.Channels(s, tc.mode, 0, bg)
		o := preset.Options{LocalExperts: layer}
		if reserved > 0 {
			o.QPsPerPeer, o.Reserved = layer+reserved, reserved
		}
		tr, err := p.Transport(o)
		if err != nil {
			t.Fatal(err)
		}
		res, err := moe.RunLayer(moe.LayerConfig{Routing: r, Mode: tc.mode, Transport: tr, Profile: profile.MustLoad("p-ib"), Background: bg, NVLink: tc.mode == moe.Normal})
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range []*moe.Phase{&res.Dispatch, &res.Combine} {
			if got := ph.Breakdown.Total(); math.Abs(got-ph.Time.Mean) > 1e-6*ph.Time.Mean+1e-6 {
				t.Errorf("%v %s %s: breakdown sums to %v µs, phase mean is %v µs", tc.mode, tc.preset, tc.bg, got, ph.Time.Mean)
			}
			if ph.BoundBy != ph.Breakdown.Largest().String() {
				t.Errorf("%v %s %s: bound by %s, largest cause %s", tc.mode, tc.preset, tc.bg, ph.BoundBy, ph.Breakdown.Largest())
			}
		}
	}
}
