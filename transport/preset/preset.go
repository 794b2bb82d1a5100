package preset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"moebench/internal/report"
	"moebench/transport"
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
	// Limits are the bounds the preset's library puts on a deployment
	// (rank caps, integer buffer sizes), each with where it is stated;
	// none for a mechanism with no library of its own.
	Limits []transport.LibraryLimit
}

// Build is the preset's transport for a workload of needs n, with the
// knob settings s over the preset's own values.
func (p Preset) Build(s transport.Settings, n transport.Needs) (transport.Transport, error) {
	m, err := transport.Lookup(p.Mechanism)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	t, err := m.Build(p.Config, p.Name, s, n)
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return t, nil
}

// BuildTaking is Build with those of the knobs s its mechanism takes: a
// sweep's settings name every mechanism's knobs.
func (p Preset) BuildTaking(s transport.Settings, n transport.Needs) (transport.Transport, error) {
	m, err := transport.Lookup(p.Mechanism)
	if err != nil {
		return nil, err
	}
	own := transport.Settings{}
	for name, v := range s {
		if transport.Takes(m, name) {
			own[name] = v
		}
	}
	return p.Build(own, n)
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
	// Own are the other knobs by name: those a mechanism declares for
	// itself (an SRD QP count, say), passed on to the mechanism that takes them.
	Own transport.Settings
}

// builtin are the knobs Options has fields for.
var builtin = []string{"qps-per-peer", "dcis", "workers", "batch", "rings", "ordering"}

// OptionsOf is Options with the knobs of s: the built-in mechanisms' in
// their fields, any other in Own.
func OptionsOf(s transport.Settings) Options {
	o := Options{QPsPerPeer: s.Int("qps-per-peer"), DCIs: s.Int("dcis"), Workers: s.Int("workers"), Batch: s.Int("batch"),
		Rings: s.Int("rings"), Ordering: s["ordering"]}
	for k, v := range s {
		if !slices.Contains(builtin, k) {
			if o.Own == nil {
				o.Own = transport.Settings{}
			}
			o.Own[k] = v
		}
	}
	return o
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
	for k, v := range o.Own {
		if transport.Takes(mech, k) {
			s[k] = v
		}
	}
	return s
}

// needs are o's workload needs for the preset. A mechanism whose queues
// the QPsPerPeer and DCIs options set gets no reserved queues from them:
// the caller has raised QPsPerPeer to cover them (RC), and DC's pool of
// initiators serves them.
func (o Options) needs(p Preset) transport.Needs {
	n := transport.Needs{Channels: o.LocalExperts, Reserved: o.Reserved}
	if m, err := transport.Lookup(p.Mechanism); err == nil && (transport.Takes(m, "qps-per-peer") || transport.Takes(m, "dcis")) {
		n.Reserved = 0
	}
	return n
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

// list is every preset, built-in then registered.
func list() []Preset {
	registered.Lock()
	defer registered.Unlock()
	return append(all(), registered.list...)
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
