package layer

import (
	"testing"

	"moebench/transport"
	"moebench/transport/preset"
)

// The views apply a workload's knobs as the presets' transports do:
// reserved background gets rings of its own past the layer's, a GDA knob
// does not reach the proxy, and a mechanism's own knobs reach it.
func TestViews(t *testing.T) {
	t.Parallel()
	pr, err := preset.Get("mini-proxy")
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := proxyConfig(pr, preset.Options{LocalExperts: 144})
	if err != nil {
		t.Fatal(err)
	}
	c, ok, err := proxyConfig(pr, preset.Options{LocalExperts: 144, QPsPerPeer: 145, Reserved: 1})
	if !ok || err != nil {
		t.Fatalf("ok %v, %v", ok, err)
	}
	if c.Rings != base.Rings+1 || c.BackgroundRings != 1 || c.BackgroundChannel0 != 144 {
		t.Fatalf("reserved: %+v (preset's rings %d)", c, base.Rings)
	}
	if c, _, _ = proxyConfig(pr, preset.Options{LocalExperts: 144, QPsPerPeer: 4}); c.Rings != base.Rings || c.BackgroundRings != 0 {
		t.Fatalf("QPs per peer reached the proxy: %+v", c)
	}
	o := preset.OptionsOf(transport.Settings{"workers": "2", "rings": "2"})
	o.LocalExperts, o.Reserved = 8, 1
	if c, _, err := proxyConfig(pr, o); err != nil || c.Rings != 3 || c.BackgroundRings != 1 || c.BackgroundChannel0 != 8 {
		t.Errorf("proxy knobs: %+v, %v", c, err)
	}
	if _, ok, _ := gdaConfig(pr, o); ok {
		t.Errorf("mini-proxy has a GDA view")
	}

	g, err := preset.Get("mini-gda")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok, err := gdaConfig(g, preset.OptionsOf(transport.Settings{"qps-per-peer": "2"})); !ok || err != nil || c.QPsPerPeer != 2 {
		t.Errorf("gda view: %d QPs per peer, %v, %v", c.QPsPerPeer, ok, err)
	}
	if _, ok, _ := proxyConfig(g, preset.Options{}); ok {
		t.Errorf("mini-gda has a proxy view")
	}
}
