package layer

import (
	"fmt"

	"moebench/transport"
	"moebench/transport/gda"
	"moebench/transport/preset"
	"moebench/transport/proxy"
	"moebench/transport/srd"
)

// The native engine drives the GPU paths of mini-gda, dc and mini-proxy
// itself, so it alone reads their configurations: these views type a
// preset's configuration for a workload, with the knobs of o applied as
// the preset's transport applies them.

// gdaConfig is the preset's mini-gda (or DC) configuration; ok is false
// for other mechanisms. Reserved queues come from QPsPerPeer, which the
// caller has raised to cover them.
func gdaConfig(p preset.Preset, o preset.Options) (c gda.Config, ok bool, err error) {
	g, ok := p.Config.(gda.Config)
	if !ok {
		return gda.Config{}, false, nil
	}
	c, err = g.With(p.Name, o.Settings(p.Mechanism), transport.Needs{Channels: o.LocalExperts})
	if err != nil {
		return gda.Config{}, true, fmt.Errorf("preset %w", err)
	}
	return c, true, nil
}

// srdConfig is the preset's SRD configuration with the knobs of o
// applied as its mechanism builds it; ok is false for other mechanisms.
func srdConfig(p preset.Preset, o preset.Options) (c srd.Config, ok bool, err error) {
	if _, ok := p.Config.(srd.Config); !ok {
		return srd.Config{}, false, nil
	}
	m, err := transport.Lookup(p.Mechanism)
	if err != nil {
		return srd.Config{}, true, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	t, err := m.Build(p.Config, p.Name, o.Settings(p.Mechanism), transport.Needs{Channels: o.LocalExperts})
	if err != nil {
		return srd.Config{}, true, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return t.(srd.Transport).Config(), true, nil
}

// proxyConfig is the preset's mini-proxy configuration; ok is false for
// other mechanisms. Reserved background gets rings of its own.
func proxyConfig(p preset.Preset, o preset.Options) (c proxy.Config, ok bool, err error) {
	pc, ok := p.Config.(proxy.Config)
	if !ok {
		return proxy.Config{}, false, nil
	}
	c, err = pc.With(o.Settings(p.Mechanism), transport.Needs{Channels: o.LocalExperts, Reserved: o.Reserved})
	if err != nil {
		return proxy.Config{}, true, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return c, true, nil
}
