package preset

import (
	"strings"
	"testing"

	"moebench/transport"
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

// Each mechanism takes only the knobs it declares: QPs per peer do not
// become proxy rings, and a reserved background gets its own queues the
// mechanism's way.
func TestBuildTakesDeclaredKnobsOnly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		preset string
		s      transport.Settings
		n      transport.Needs
		want   string // the error, or the transport's name
	}{
		{"mini-proxy", transport.Settings{"qps-per-peer": "4"}, transport.Needs{Channels: 8}, "preset mini-proxy: mini-proxy takes no --qps-per-peer"},
		{"dc", transport.Settings{"qps-per-peer": "4"}, transport.Needs{Channels: 8}, "preset dc: dc takes no --qps-per-peer"},
		{"gdaki", transport.Settings{"rings": "4"}, transport.Needs{Channels: 8}, "preset gdaki: mini-gda takes no --rings"},
		{"mini-gda", transport.Settings{"ordering": "sideways"}, transport.Needs{Channels: 8}, `unknown ordering "sideways"`},
		{"mini-proxy", transport.Settings{"workers": "2", "rings": "2"}, transport.Needs{Channels: 8, Reserved: 1}, "mini-proxy"},
		{"mini-gda", transport.Settings{"qps-per-peer": "2"}, transport.Needs{Channels: 8, Reserved: 1}, "mini-gda"},
	} {
		p, err := Get(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := p.Build(tc.s, tc.n)
		switch {
		case err != nil && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s %v: %v, want %q", tc.preset, tc.s, err, tc.want)
		case err == nil && tr.Name() != tc.want:
			t.Errorf("%s %v: built %s, want %q", tc.preset, tc.s, tr.Name(), tc.want)
		}
	}
}
