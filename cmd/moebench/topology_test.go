package main

import (
	"strings"
	"testing"
)

func TestParseTopology(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in      string
		want    []topoValue
		wantErr string
	}{
		{"switch", []topoValue{{"topo.tiers", 1}}, ""},
		{" Leaf-Spine ", []topoValue{{"topo.tiers", 2}}, ""},
		{"leaf-spine:ecmp", []topoValue{{"topo.tiers", 2}, {"topo.adaptive", 0}}, ""},
		{"leaf-spine:adaptive", []topoValue{{"topo.tiers", 2}, {"topo.adaptive", 1}}, ""},
		{"leaf-spine:random", nil, `routing "random"`},
		{"switch:ecmp", nil, "no routing"},
		{"torus", nil, "want switch, leaf-spine"},
		{"", nil, "want switch"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseTopology(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func FuzzParseTopology(f *testing.F) {
	for _, s := range []string{"switch", "leaf-spine", "leaf-spine:adaptive", "leaf-spine:ecmp", "x:y:z", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vals, err := parseTopology(s)
		if err != nil {
			return
		}
		if len(vals) == 0 || vals[0].name != "topo.tiers" {
			t.Fatalf("%q: %v does not set the tiers first", s, vals)
		}
	})
}

// The default fabric is the single switch: --topology switch changes
// nothing, and a leaf/spine says so in the header and changes the figures.
func TestTopologyFlag(t *testing.T) {
	t.Parallel()
	args := append([]string{"--transport", "mini-gda"}, small...)
	def, _, err := layerCLI(t, runCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	sw, _, err := layerCLI(t, runCmd, append(args, "--topology", "switch")...)
	if err != nil {
		t.Fatal(err)
	}
	if sw != def {
		t.Errorf("--topology switch differs from the default:\n%s\nwant\n%s", sw, def)
	}
	// Four GPUs to a node, two to a NIC: two rails, and radix-4 leaves
	// hold two nodes each, so EP8's two nodes sit on one leaf per rail.
	ls, _, err := layerCLI(t, sweepCmd, append(args, "--topology", "leaf-spine:adaptive", "--set", "topo.gpus_per_nic=2")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ls, "# fabric: rail-optimized leaf/spine") || !strings.Contains(ls, "2 GPUs per NIC") {
		t.Errorf("a leaf/spine sweep's header does not describe the fabric:\n%s", ls)
	}
	if _, _, err := layerCLI(t, runCmd, append(args, "--topology", "ring")...); err == nil || !strings.Contains(err.Error(), "--topology") {
		t.Errorf("--topology ring: error %v, want one naming the flag", err)
	}
}

// A layer with more experts than its launch has warp groups is one DeepEP
// refuses: the header says so, and only then.
func TestLaunchBeyondDeepEPIsNoted(t *testing.T) {
	t.Parallel()
	args := append([]string{"--transport", "mini-gda"}, small...)
	def, _, err := layerCLI(t, runCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(def, "ll launch") {
		t.Errorf("a launch DeepEP makes is noted as beyond it:\n%s", def)
	}
	// An SM of 32 warp groups serves 32 experts at most; a sweep over the
	// GPU's SMs names each launch beyond.
	over, _, err := layerCLI(t, sweepCmd, append(args, "--num-sms", "1", "--experts", "64", "--set", "gpu.sms=100,132")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(over, "# ll launch: more experts than the launch's warp groups (32 per SM): 64 experts over 32;") {
		t.Errorf("a launch beyond DeepEP's is not noted:\n%s", over)
	}
}
