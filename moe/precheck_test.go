package moe_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport/preset"
)

// Precheck reads exactly the constants a run reads (but the capacity
// limits, which only it reads): a command refuses an unread --set from it,
// before running, so a constant it missed would refuse a --set the run
// uses, and one it read beyond the run would let a useless --set through.
func TestPrecheckReadsWhatTheRunReads(t *testing.T) {
	t.Parallel()
	var all []string
	for _, d := range profile.Defs() {
		all = append(all, d.Name)
	}
	capacity := []string{"gpu.memory_gb", "gpu.reserved_gb", "nic.max_qps", "nic.max_qp_wr"}
	bulk := moe.Background{CTAs: 2, Bytes: 4096}
	reserved := bulk
	reserved.Reserved = true
	for _, name := range preset.Names() {
		for _, tc := range []struct {
			label   string
			mode    moe.Mode
			perNode int
			nvlink  bool
			bg      moe.Background
		}{
			{"ll", moe.LL, 4, false, moe.Background{}},
			{"ll nvlink reserved", moe.LL, 4, true, reserved},
			{"ll shared", moe.LL, 8, false, bulk},
			{"normal one node", moe.Normal, 8, true, moe.Background{}},
			{"normal nodes", moe.Normal, 4, true, moe.Background{}},
		} {
			t.Run(name+" "+tc.label, func(t *testing.T) {
				t.Parallel()
				s := layerShape(8, tc.perNode, 32, 8, 512)
				cfg := layerConfig(t, s, tc.mode, name, preset.Options{}, tc.bg, tc.nvlink)
				// EFA's mechanism runs only on an EFA host.
				host := "p-ib"
				if p, err := preset.Get(name); err == nil && p.Mechanism == "srd" {
					host = "p-b200-efa"
				}
				pre, ran := profile.MustLoad(host), profile.MustLoad(host)
				cfg.Profile = pre
				if err := moe.Precheck(s, cfg); err != nil {
					t.Fatalf("Precheck: %v", err)
				}
				cfg.Profile = ran
				if _, err := moe.RunLayer(cfg); err != nil {
					t.Fatalf("RunLayer: %v", err)
				}
				notPre, notRan := pre.Unread(all), ran.Unread(all)
				for _, n := range all {
					switch inPre, inRan := !slices.Contains(notPre, n), !slices.Contains(notRan, n); {
					case inRan && !inPre:
						t.Errorf("the run reads %s, Precheck does not", n)
					case inPre && !inRan && !slices.Contains(capacity, n):
						t.Errorf("Precheck reads %s, the run does not", n)
					case slices.Contains(capacity, n) && !inPre:
						t.Errorf("Precheck does not read the limit %s", n)
					}
				}
			})
		}
	}
}

func TestPrecheckRefuses(t *testing.T) {
	t.Parallel()
	base := layerShape(16, 8, 256, 128, 7168)
	for _, tc := range []struct {
		name   string
		shape  func(s *moe.Shape)
		mode   moe.Mode
		preset string
		o      preset.Options
		sets   []string
		want   error  // nil: accepted
		msg    string // in the error
	}{
		{name: "the default layer", preset: "mini-gda"},
		{name: "queues too shallow for LL", preset: "dc", shape: func(s *moe.Shape) { s.Tokens = 1024 }, want: moe.ErrQueueDepth, msg: "2050"},
		{name: "at the deepest tokens LL allows", preset: "dc", shape: func(s *moe.Shape) { s.Tokens = 511 }},
		{name: "a million experts' buffers", preset: "mini-proxy", shape: func(s *moe.Shape) { s.Experts = 1 << 20 }, want: moe.ErrOverCapacity, msg: "gpu.memory_gb = 141"},
		{name: "a GPU with less memory", preset: "mini-gda", sets: []string{"gpu.memory_gb=1"}, want: moe.ErrOverCapacity, msg: "more than the GPU's 1.000 GB"},
		{name: "buffers past 64 bits", preset: "mini-proxy", shape: func(s *moe.Shape) { s.Experts, s.Tokens, s.Hidden, s.TopK = 1<<20, 100000, 1<<29, 1 }, want: moe.ErrOverCapacity, msg: "over 4611686018 GB"},
		{name: "a million QPs a NIC", preset: "mini-gda", shape: func(s *moe.Shape) { s.Experts, s.Tokens = 1<<20, 1 }, want: moe.ErrOverCapacity, msg: "1048576 QPs per NIC"},
		{name: "a million DCIs", preset: "dc", o: preset.Options{DCIs: 1 << 20}, want: moe.ErrOverCapacity, msg: "1048576 DCIs per NIC"},
		{name: "a NIC of fewer QPs", preset: "mini-gda", sets: []string{"nic.max_qps=255"}, want: moe.ErrOverCapacity, msg: "256 QPs per NIC"},
		{name: "top-k beyond LL's warps", preset: "mini-gda", shape: func(s *moe.Shape) { s.TopK = 33 }, msg: "topk: 33"},
		{name: "normal mode's buffers", preset: "mini-gda", mode: moe.Normal, shape: func(s *moe.Shape) { s.Hidden = 4 << 20 }, want: moe.ErrOverCapacity, msg: "normal-mode buffers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := base
			if tc.shape != nil {
				tc.shape(&s)
			}
			mode := tc.mode
			if mode == 0 {
				mode = moe.LL
			}
			p, err := preset.Get(tc.preset)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.o
			o.LocalExperts, _ = moe.Channels(s, mode, 0, moe.Background{})
			tr, err := p.Transport(o)
			if err != nil {
				t.Fatal(err)
			}
			prof := profile.MustLoad("p-ib")
			if err := prof.ApplySets(tc.sets); err != nil {
				t.Fatal(err)
			}
			err = moe.Precheck(s, moe.LayerConfig{Mode: mode, Transport: tr, Profile: prof, NVLink: mode == moe.Normal})
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.msg != "" && err == nil:
				t.Fatalf("accepted, want an error naming %q", tc.msg)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("error %v is not %v", err, tc.want)
			case tc.msg != "" && !strings.Contains(err.Error(), tc.msg):
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}
