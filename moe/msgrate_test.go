package moe_test

import (
	"testing"

	"moebench/moe"
	"moebench/profile"
	"moebench/transport/preset"
)

// A NIC whose message rate is what limits the layer puts the wait behind
// other messages under msg_rate, not egress; a link-bound layer keeps it
// under egress. A CPU proxy's posts take the NIC's slots as GPU ones do.
func TestMessageRateBoundsTheLayer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, preset string
		sets         []string
		bound        string
	}{
		{"mini-gda, p-ib's rate", "mini-gda", nil, "egress"},
		{"mini-gda, 1 M msg/s", "mini-gda", []string{"nic.msg_rate_mps=1"}, "msg_rate"},
		{"mini-proxy, 1 M msg/s", "mini-proxy", []string{"nic.msg_rate_mps=1"}, "msg_rate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := layerConfig(t, layerShape(16, 8, 64, 32, 7168), moe.LL, c.preset, preset.Options{}, moe.Background{}, false)
			p := profile.MustLoad("p-ib")
			if err := p.ApplySets(c.sets); err != nil {
				t.Fatal(err)
			}
			cfg.Profile = p
			res, err := moe.RunLayer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for name, ph := range map[string]*moe.Phase{"dispatch": &res.Dispatch, "combine": &res.Combine} {
				if ph.BoundBy != c.bound {
					t.Errorf("%s bound by %s, want %s (breakdown %v)", name, ph.BoundBy, c.bound, ph.Breakdown.Map())
				}
			}
		})
	}
}
