package preset

import (
	"fmt"
	"slices"
	"strings"

	"moebench/transport"
	"moebench/transport/gda"
	"moebench/transport/proxy"
)

// Preset is a named transport configuration: data over one mechanism.
type Preset struct {
	Name        string
	Mechanism   string // mini-gda, mini-proxy or dc
	Description string
	Source      string
	// Exactly one of GDA (mini-gda and dc) and Proxy is set.
	GDA   *gda.Config
	Proxy *proxy.Config
	// PerExpertQPs: the workload's QPs per peer follow its local experts
	// (DeepEP LL maps QP index = destination local expert).
	PerExpertQPs bool
}

// Options are the workload-dependent knobs a preset may take.
type Options struct {
	LocalExperts int // the layer's channels (LL: experts per rank), for presets that map QPs to them
	QPsPerPeer   int // 0 = the preset's own choice
	// Reserved is how many queues reserved background traffic asks for
	// on channels from LocalExperts on. A GDA caller raises QPsPerPeer to
	// cover them; a proxy gets that many rings of their own.
	Reserved int
	// Mechanism knobs; 0 keeps the preset's value, and a knob that does
	// not apply to the preset's mechanism is ignored.
	DCIs    int // dc
	Workers int // mini-proxy: CPU workers per rank
	Batch   int // mini-proxy: work requests chained per post
	Rings   int // mini-proxy: descriptor rings per rank
	// Ordering before each doorbell (mini-gda and dc); "" keeps the
	// preset's.
	Ordering string
}

// QPsPerPeer is the preset's own RC QPs per peer (0 for other mechanisms).
func (p Preset) QPsPerPeer() int {
	if p.GDA == nil || p.GDA.DCIs > 0 {
		return 0
	}
	return p.GDA.QPsPerPeer
}

// GDAConfig is the preset's mini-gda (or DC) configuration for a
// workload, its knobs applied; ok is false for other mechanisms.
func (p Preset) GDAConfig(o Options) (c gda.Config, ok bool, err error) {
	if p.GDA == nil {
		return gda.Config{}, false, nil
	}
	c = *p.GDA
	c.Name = p.Name
	if p.PerExpertQPs && o.LocalExperts > 0 {
		c.QPsPerPeer = max(c.QPsPerPeer, o.LocalExperts)
	}
	if o.QPsPerPeer > 0 && c.DCIs == 0 {
		c.QPsPerPeer = o.QPsPerPeer
	}
	if o.DCIs > 0 && c.DCIs > 0 {
		c.DCIs = o.DCIs
	}
	if o.Ordering != "" {
		ord, ok := gda.ParseOrdering(o.Ordering)
		if !ok {
			return gda.Config{}, true, fmt.Errorf("preset %s: unknown ordering %q (want one of %v)", p.Name, o.Ordering, gda.OrderingModes())
		}
		c.Ordering = ord
	}
	if err := c.Validate(); err != nil {
		return gda.Config{}, true, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return c, true, nil
}

// ProxyConfig is the preset's mini-proxy configuration for a workload,
// its knobs applied; ok is false for other mechanisms.
func (p Preset) ProxyConfig(o Options) (c proxy.Config, ok bool, err error) {
	if p.Proxy == nil {
		return proxy.Config{}, false, nil
	}
	c = *p.Proxy
	if o.Workers > 0 {
		c.Workers = o.Workers
	}
	if o.Batch > 0 {
		c.Batch = o.Batch
	}
	if o.Rings > 0 {
		c.Rings = o.Rings
	}
	if o.Reserved > 0 {
		// Reserved background traffic: rings of its own past the
		// layer's, which keep their number.
		c.BackgroundRings, c.BackgroundChannel0 = o.Reserved, o.LocalExperts
		c.Rings += o.Reserved
	}
	if err := c.Validate(); err != nil {
		return proxy.Config{}, true, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return c, true, nil
}

// Transport builds the preset's transport for a workload.
func (p Preset) Transport(o Options) (transport.Transport, error) {
	if c, ok, err := p.GDAConfig(o); ok {
		if err != nil {
			return nil, err
		}
		return c.Transport(), nil
	}
	if c, ok, err := p.ProxyConfig(o); ok {
		if err != nil {
			return nil, err
		}
		return named{proxy.New(c), p.Name}, nil
	}
	return nil, fmt.Errorf("preset %s configures no transport", p.Name)
}

// named gives a transport its preset's name.
type named struct {
	transport.Transport
	name string
}

func (n named) Name() string { return n.name }

func all() []Preset {
	ps := append(gdaPresets(), dcPresets()...)
	return append(ps, proxyPresets()...)
}

// Names lists the presets.
func Names() []string {
	var n []string
	for _, p := range all() {
		n = append(n, p.Name)
	}
	return n
}

// Get returns a preset by name.
func Get(name string) (Preset, error) {
	for _, p := range all() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %q (known: %s)", name, strings.Join(Names(), ", "))
}

// All returns every preset, grouped by mechanism.
func All() []Preset {
	ps := all()
	slices.SortStableFunc(ps, func(a, b Preset) int { return strings.Compare(a.Mechanism, b.Mechanism) })
	return ps
}
