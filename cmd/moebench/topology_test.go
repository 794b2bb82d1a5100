package main

import (
	"strings"
	"testing"
)

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
	if _, _, err := layerCLI(t, runCmd, append(args, "--topology", "ring")...); err == nil || !strings.Contains(message(err), "--topology") {
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
