package gda

import (
	"strings"
	"testing"

	"moebench/profile"
)

func TestWriteLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload int
		inline  bool
		av      int
		segs    int
		bbs     int
		loads   int
	}{
		{8, true, 0, 3, 1, 0},  // ctrl + raddr + inline word and 8 B
		{28, true, 0, 4, 1, 1}, // Fig. 2: 28 B inline fills a 64 B WQE
		{29, true, 0, 5, 2, 2}, // one byte more needs a second block
		{92, true, 0, 8, 2, 5}, // Fig. 2: 92 B inline needs 128 B
		{8, false, 0, 3, 1, 0}, // pointer: data segment
		{7168, false, 0, 3, 1, 0},
		{8, true, 16, 4, 1, 0},  // DC adds a 16 B address vector
		{8, false, 48, 6, 2, 0}, // without the compact AV form
	} {
		got := WriteLayout(tc.payload, tc.inline, tc.av)
		if got.Segments != tc.segs || got.BBs != tc.bbs || got.Loads != tc.loads {
			t.Errorf("WriteLayout(%d, inline=%v, av=%d) = %+v, want %d segments, %d blocks, %d loads",
				tc.payload, tc.inline, tc.av, got, tc.segs, tc.bbs, tc.loads)
		}
	}
}

func TestRateConfigValidate(t *testing.T) {
	t.Parallel()
	ok := RateConfig{Threads: 32, QPs: 1, SMs: 1, PerDoorbell: 32, Style: PubCoop, Payload: 8, Inline: true, Depth: 1024}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*RateConfig)
		want string
	}{
		{func(c *RateConfig) { c.Threads = 0 }, "at least 1"},
		{func(c *RateConfig) { c.QPs = 3 }, "do not divide evenly"},
		{func(c *RateConfig) { c.Threads = 48; c.QPs = 1 }, "whole warps"},
		{func(c *RateConfig) { c.Depth = 16 }, "below 32 WQEs per doorbell"},
	} {
		c := ok
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", c, err, tc.want)
		}
	}
}

func TestRateIsDeterministic(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	cfg := RateConfig{Threads: 64, QPs: 16, SMs: 4, PerDoorbell: 8, Style: PubThread, Ordering: OrderGPUFence, Payload: 8, Inline: true, Depth: 256}
	a, err := Rate(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Rate(p, cfg)
	if a != b {
		t.Fatalf("two runs differ: %v vs %v", a, b)
	}
}

func TestShallowQueueLimitsRate(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-ib")
	cfg := RateConfig{Threads: 1, QPs: 1, SMs: 1, PerDoorbell: 4, Style: PubThread, Ordering: OrderGPUFence, Payload: 8, Inline: true, Depth: 1024}
	deep, _ := Rate(p, cfg)
	cfg.Depth = 4 // one doorbell batch in flight: every batch waits a completion round trip
	shallow, err := Rate(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if shallow > deep/2 {
		t.Fatalf("depth 4 rate %.2f vs depth 1024 %.2f: reclamation should bind", shallow, deep)
	}
}

func TestSingleOpRejectsEmptyPayload(t *testing.T) {
	t.Parallel()
	if _, err := SingleOp(profile.MustLoad("p-ib"), SingleConfig{Payload: 0}); err == nil {
		t.Fatal("want an error for a zero payload")
	}
}

func TestParseNames(t *testing.T) {
	t.Parallel()
	for _, m := range OrderingModes() {
		if got, ok := ParseOrdering(m.String()); !ok || got != m {
			t.Errorf("ordering %v does not round-trip", m)
		}
	}
	for _, s := range []Publication{PubThread, PubCoop, PubHandoff, PubLock} {
		if got, ok := ParsePublication(s.String()); !ok || got != s {
			t.Errorf("style %v does not round-trip", s)
		}
	}
}

func BenchmarkRate64QPs(b *testing.B) {
	b.ReportAllocs()
	p := profile.MustLoad("p-ib")
	cfg := RateConfig{Threads: 64, QPs: 64, SMs: 64, PerDoorbell: 16, Style: PubThread, Ordering: OrderGPUFence, Payload: 8, Inline: true, Depth: 1024}
	for b.Loop() {
		if _, err := Rate(p, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(max(20000, 64*64)), "msgs/op")
}
