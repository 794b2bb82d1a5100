package preset_test

import (
	"testing"

	"moebench/profile"
	"moebench/transport"
)

// "all" takes what a platform runs: the RC mechanisms on an InfiniBand
// host, only EFA's own on an EFA host.
func TestAllFollowsThePlatform(t *testing.T) {
	t.Parallel()
	ib, efa := profile.MustLoad("p-ib"), profile.MustLoad("p-b200-efa")
	for _, tc := range []struct {
		mech    string
		ib, efa bool
	}{{"mini-gda", true, false}, {"dc", true, false}, {"mini-proxy", true, false}, {"srd", false, true}, {"no-such", true, true}} {
		if got := transport.InAll(tc.mech, ib); got != tc.ib {
			t.Errorf("%s on p-ib: in all %v, want %v", tc.mech, got, tc.ib)
		}
		if got := transport.InAll(tc.mech, efa); got != tc.efa {
			t.Errorf("%s on p-b200-efa: in all %v, want %v", tc.mech, got, tc.efa)
		}
	}
	if err := transport.RCHost(efa); err == nil {
		t.Error("an EFA host has RC queue pairs")
	}
}
