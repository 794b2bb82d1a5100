package preset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"moebench/internal/report"
	"moebench/transport"
	"moebench/transport/gda"
	"moebench/transport/proxy"
)

// Preset is a named transport configuration: data over one registered
// mechanism.
type Preset struct {
	Name        string
	Mechanism   string // a registered transport.Mechanism's name
	Description string
	Source      string
	// Config is the mechanism's own configuration type (gda.Config for
	// mini-gda and dc, proxy.Config for mini-proxy), which its Mechanism
	// builds a transport from.
	Config any
	// GDA and Proxy are Config typed for the native engine, which drives
	// these two mechanisms' GPU paths itself; Get and All fill them, and a
	// change to one is what Transport builds. Nil for other mechanisms.
	GDA   *gda.Config
	Proxy *proxy.Config
}

// config is what the preset's mechanism builds from.
func (p Preset) config() any {
	switch {
	case p.GDA != nil:
		return *p.GDA
	case p.Proxy != nil:
		return *p.Proxy
	}
	return p.Config
}

// typed fills the native engine's typed views of the configuration.
func typed(p Preset) Preset {
	switch c := p.Config.(type) {
	case gda.Config:
		p.GDA = &c
	case proxy.Config:
		p.Proxy = &c
	}
	return p
}

// Build is the preset's transport for a workload of needs n, with the
// knob settings s over the preset's own values.
func (p Preset) Build(s transport.Settings, n transport.Needs) (transport.Transport, error) {
	m, err := transport.Lookup(p.Mechanism)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	t, err := m.Build(p.config(), p.Name, s, n)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return t, nil
}

// Options are the knobs of the built-in mechanisms as the native engine
// sets them; other callers use Build with knob settings.
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

// OptionsOf is Options with the built-in mechanisms' knobs of s.
func OptionsOf(s transport.Settings) Options {
	return Options{QPsPerPeer: s.Int("qps-per-peer"), DCIs: s.Int("dcis"), Workers: s.Int("workers"), Batch: s.Int("batch"),
		Rings: s.Int("rings"), Ordering: s["ordering"]}
}

// Settings are o's knobs by name, those the mechanism m takes.
func (o Options) Settings(m string) transport.Settings {
	s := transport.Settings{}
	mech, err := transport.Lookup(m)
	if err != nil {
		return s
	}
	for name, v := range map[string]int{"qps-per-peer": o.QPsPerPeer, "dcis": o.DCIs, "workers": o.Workers, "batch": o.Batch, "rings": o.Rings} {
		if v > 0 && transport.Takes(mech, name) {
			s[name] = strconv.Itoa(v)
		}
	}
	if o.Ordering != "" && transport.Takes(mech, "ordering") {
		s["ordering"] = o.Ordering
	}
	return s
}

// needs are o's workload needs for the preset: a GDA caller has raised
// QPsPerPeer for reserved queues already.
func (o Options) needs(p Preset) transport.Needs {
	n := transport.Needs{Channels: o.LocalExperts, Reserved: o.Reserved}
	if p.GDA != nil {
		n.Reserved = 0
	}
	return n
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
	c, err = p.GDA.With(p.Name, o.Settings(p.Mechanism), o.needs(p))
	if err != nil {
		return gda.Config{}, true, fmt.Errorf("preset %w", err)
	}
	return c, true, nil
}

// ProxyConfig is the preset's mini-proxy configuration for a workload,
// its knobs applied; ok is false for other mechanisms.
func (p Preset) ProxyConfig(o Options) (c proxy.Config, ok bool, err error) {
	if p.Proxy == nil {
		return proxy.Config{}, false, nil
	}
	c, err = p.Proxy.With(o.Settings(p.Mechanism), o.needs(p))
	if err != nil {
		return proxy.Config{}, true, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return c, true, nil
}

// Transport builds the preset's transport for a workload from Options.
func (p Preset) Transport(o Options) (transport.Transport, error) {
	return p.Build(o.Settings(p.Mechanism), o.needs(p))
}

var registered struct {
	sync.Mutex
	list []Preset
}

// Register adds presets of any registered mechanism, after the built-in
// ones; a name already taken panics (a programming error).
func Register(ps ...Preset) {
	registered.Lock()
	defer registered.Unlock()
	for _, p := range ps {
		if slices.ContainsFunc(all(), func(o Preset) bool { return o.Name == p.Name }) ||
			slices.ContainsFunc(registered.list, func(o Preset) bool { return o.Name == p.Name }) {
			panic("preset: Register called twice for " + p.Name)
		}
		registered.list = append(registered.list, p)
	}
}

func all() []Preset {
	ps := append(gdaPresets(), dcPresets()...)
	return append(ps, proxyPresets()...)
}

// list is every preset, built-in then registered, with typed views.
func list() []Preset {
	registered.Lock()
	ps := append(all(), registered.list...)
	registered.Unlock()
	for i := range ps {
		ps[i] = typed(ps[i])
	}
	return ps
}

// Names lists the presets.
func Names() []string {
	var n []string
	for _, p := range list() {
		n = append(n, p.Name)
	}
	return n
}

// Get returns a preset by name.
func Get(name string) (Preset, error) {
	for _, p := range list() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("unknown preset %s (known: %s)", report.Quote(name), strings.Join(Names(), ", "))
}

// All returns every preset, grouped by mechanism.
func All() []Preset {
	ps := list()
	slices.SortStableFunc(ps, func(a, b Preset) int { return strings.Compare(a.Mechanism, b.Mechanism) })
	return ps
}
