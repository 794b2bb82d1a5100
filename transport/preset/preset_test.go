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
