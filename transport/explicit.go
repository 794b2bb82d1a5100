package transport

import (
	"fmt"

	"moebench/profile"
)

// HostBound is implemented by mechanisms that run only on some platforms:
// a platform's own transport, such as EFA's, which other platforms' NICs
// do not speak, or RC mechanisms, which EFA does not. Host says why p's
// platform cannot run the mechanism, or nil. "all" leaves out what the
// profile's platform cannot run, and the mechanism's Open refuses it by
// the same check.
type HostBound interface {
	Host(p *profile.Profile) error
}

// InAll reports whether "all" takes the mechanism named name on profile
// p: any registered one whose Host accepts p (or that has no Host), and
// any name not registered (for the caller to refuse by name).
func InAll(name string, p *profile.Profile) bool {
	m, err := Lookup(name)
	if err != nil {
		return true
	}
	h, ok := m.(HostBound)
	return !ok || p == nil || h.Host(p) == nil
}

// RCHost refuses a platform without RC queue pairs, for the mechanisms
// built on them: an EFA host's adapters speak SRD and UD only (and no
// ConnectX DC or mlx5 WQEs).
func RCHost(p *profile.Profile) error {
	if g := p.Get("efa.generation"); g > 0 {
		return fmt.Errorf("profile %s is an EFA host (efa.generation %g): EFA has no RC queue pairs, so mechanisms built on them cannot run there; its own presets do", p.Name, g)
	}
	return nil
}
