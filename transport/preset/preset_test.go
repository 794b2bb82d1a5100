package preset

import (
	"strings"
	"testing"
)

func TestPresetsBuildAndCiteSources(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, p := range All() {
		if seen[p.Name] {
			t.Errorf("preset %s listed twice", p.Name)
		}
		seen[p.Name] = true
		if p.Source == "" || p.Description == "" || p.Mechanism == "" {
			t.Errorf("preset %s lacks a source, description or mechanism", p.Name)
		}
		tr, err := p.Transport(Options{LocalExperts: 8})
		if err != nil {
			t.Errorf("preset %s: %v", p.Name, err)
			continue
		}
		if tr.Name() != p.Name {
			t.Errorf("preset %s builds a transport named %s", p.Name, tr.Name())
		}
	}
	for _, want := range []string{"mini-gda", "deepep-v1", "nvshmem-ibgda", "gdaki", "dc"} {
		if !seen[want] {
			t.Errorf("preset %s missing", want)
		}
	}
	if _, err := Get("nope"); err == nil || !strings.Contains(err.Error(), "deepep-v1") {
		t.Errorf("unknown preset error should list the known ones: %v", err)
	}
}

// Reserved background gets rings of its own; the layer keeps the preset's
// and a GDA knob does not reach the proxy.
func TestProxyConfigReserved(t *testing.T) {
	t.Parallel()
	p, err := Get("mini-proxy")
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := p.ProxyConfig(Options{LocalExperts: 144})
	if err != nil {
		t.Fatal(err)
	}
	c, ok, err := p.ProxyConfig(Options{LocalExperts: 144, QPsPerPeer: 145, Reserved: 1})
	if !ok || err != nil {
		t.Fatalf("ok %v, %v", ok, err)
	}
	if c.Rings != base.Rings+1 || c.BackgroundRings != 1 || c.BackgroundChannel0 != 144 {
		t.Fatalf("reserved: %+v (preset's rings %d)", c, base.Rings)
	}
	c, _, _ = p.ProxyConfig(Options{LocalExperts: 144, QPsPerPeer: 4})
	if c.Rings != base.Rings || c.BackgroundRings != 0 {
		t.Fatalf("QPs per peer reached the proxy: %+v", c)
	}
}
