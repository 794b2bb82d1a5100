package preset_test

import (
	"slices"
	"testing"

	"moebench/transport"
	"moebench/transport/preset"
)

// A sweep's settings name every mechanism's knobs: a preset builds with
// those its mechanism takes and leaves the others out.
func TestBuildTaking(t *testing.T) {
	t.Parallel()
	p, err := preset.Get("deepep-v1")
	if err != nil {
		t.Fatal(err)
	}
	s := transport.Settings{"qps-per-peer": "2", "workers": "4"}
	needs := transport.Needs{Channels: 8}
	if _, err := p.BuildTaking(s, needs); err != nil {
		t.Fatalf("BuildTaking: %v", err)
	}
	if got := transport.Takers("workers"); !slices.Contains(got, "mini-proxy") || slices.Contains(got, "mini-gda") {
		t.Errorf("Takers(workers) = %v, want mini-proxy's and not mini-gda's", got)
	}
	if got := transport.Takers("qps-per-peer"); !slices.Contains(got, "mini-gda") || slices.Contains(got, "mini-proxy") {
		t.Errorf("Takers(qps-per-peer) = %v", got)
	}
	if got := transport.Takers("no-such-knob"); got != nil {
		t.Errorf("Takers(no-such-knob) = %v, want none", got)
	}
}
