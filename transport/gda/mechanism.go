package gda

import (
	"fmt"
	"slices"

	"moebench/hw"
	"moebench/profile"
	"moebench/transport"
)

// The two mechanisms of this package, as they declare themselves to the
// seam: RC queue pairs (mini-gda) and Dynamically Connected transport
// (dc). Both take a Config; DCIs > 0 selects DC.
func init() {
	transport.Register(mechanism{name: "mini-gda",
		summary: "GPU threads build mlx5 WQEs, ring the doorbell and poll CQs over RC QPs",
		knobs:   []transport.Knob{qpsKnob, orderingKnob()},
		causes:  rcCauses,
		holds:   []transport.Resource{dcisResource}})
	transport.Register(mechanism{name: "dc",
		summary: "GPU submission over Dynamically Connected transport: a DCI pool, DCTs, an address vector per WQE",
		knobs:   []transport.Knob{dcisKnob, orderingKnob()},
		causes:  dcCauses,
		holds:   []transport.Resource{dcisResource}})
}

// DCIsResource names, in Resources.Own, the DC initiators per NIC (all
// of QPsPerNIC under DC). Both mechanisms of the package declare it, so
// that a report of RC QPs shows it (none) beside DC's.
const DCIsResource = "DCIs/NIC"

var dcisResource = transport.Resource{Name: DCIsResource, Field: "dcis_per_nic", Words: "DCIs per NIC",
	Queues: "DCIs", Knob: "dcis", Size: true}

// Bytes of the simulation per DC initiator, fit with the workload's
// memory (moe.EstimateCost) to the peak RSS of moebench run --transport
// dc (1,024 ranks).
const simBytesPerDCI = 400

var (
	connMiss  = transport.Cause{Name: "conn_miss", Help: "NIC time fetching connection context (RC QP or DCI state)"}
	dciSwitch = transport.Cause{Name: "dci_switch", Help: "NIC time re-targeting a DCI to a new destination"}
	rcCauses  = []transport.Cause{connMiss}
	dcCauses  = []transport.Cause{connMiss, dciSwitch}

	qpsKnob = transport.Knob{Name: "qps-per-peer", Column: "qps/peer", Field: "qps_per_peer", Label: "RC QPs per peer",
		Help:  "mini-gda: RC QPs per peer, overriding the preset's (0 = the preset's)",
		Sizes: "powers of two up to the layer's channels, and twice them", Min: 0, Max: hw.MaxQPs}
	dcisKnob = transport.Knob{Name: "dcis", Column: "DCIs", Field: "dcis", Label: "DC DCIs per NIC",
		Help:  "dc: DCIs per NIC, overriding the preset's",
		Sizes: "powers of two up to max(2 × channels, 16)", Min: 1, Max: 1 << 20}
)

// orderingKnob takes the orderings a layer can use (not "none", which
// publishes unwritten WQEs).
func orderingKnob() transport.Knob {
	var names []string
	for _, o := range OrderingModes() {
		if o != OrderNone {
			names = append(names, o.String())
		}
	}
	return transport.Knob{Name: "ordering", Column: "ordering", Label: "ordering before each doorbell",
		Help: "mini-gda and dc: ordering before each doorbell, overriding the preset's", Choices: names}
}

type mechanism struct {
	name, summary string
	knobs         []transport.Knob
	causes        []transport.Cause
	holds         []transport.Resource
}

var (
	_ transport.Mechanism = mechanism{}
	_ transport.HostBound = mechanism{}
	_ transport.Sizer     = mechanism{}
	_ transport.Holder    = mechanism{}
	_ transport.Footprint = mechanism{}
	_ transport.Transport = gdaTransport{}
	_ transport.Estimator = gdaTransport{}
)

func (m mechanism) Name() string { return m.name }

// Host: mlx5 WQEs over RC (or DC) need a ConnectX, not an EFA host.
func (m mechanism) Host(p *profile.Profile) error { return transport.RCHost(p) }
func (m mechanism) Summary() string               { return m.summary }
func (m mechanism) Knobs() []transport.Knob       { return m.knobs }
func (m mechanism) Causes() []transport.Cause     { return m.causes }
func (m mechanism) Holds() []transport.Resource   { return m.holds }

// SimCost is a layer's send queues: RC QPs per peer for each channel (or
// as the knob sets them), at least four; under DC a pool of DCIs per
// rank, at least 64, in place of them.
func (m mechanism) SimCost(ranks, channels int, s transport.Settings) transport.SimCost {
	r := int64(ranks)
	if m.name == "dc" {
		return transport.SimCost{Bytes: simBytesPerDCI * float64(r*int64(max(s.Int(dcisKnob.Name), 64)))}
	}
	return transport.SimCost{Queues: r * r * int64(max(s.Int(qpsKnob.Name), channels, 4))}
}

// Build applies s and n to cfg, a Config.
func (m mechanism) Build(cfg any, name string, s transport.Settings, n transport.Needs) (transport.Transport, error) {
	c, ok := cfg.(Config)
	if !ok {
		return nil, fmt.Errorf("%s: configuration is a %T, want a gda.Config", m.name, cfg)
	}
	if k := s.Unknown(m.knobs); k != "" {
		return nil, fmt.Errorf("%s takes no --%s", m.name, k)
	}
	c, err := c.With(name, s, n)
	if err != nil {
		return nil, err
	}
	return c.Transport(), nil
}

// With is c named name for a workload of needs n, with the knobs of s
// (qps-per-peer, dcis, ordering) over its own values. QPs per peer cover
// the layer's channels when PerChannelQPs is set; the knobs say what the
// layer's own traffic gets, and a reserved background's queues come on
// top of them (RC QPs per peer, or DCIs per NIC), never in their place.
func (c Config) With(name string, s transport.Settings, n transport.Needs) (Config, error) {
	c.Name = name
	if c.PerChannelQPs && n.Channels > 0 {
		c.QPsPerPeer = max(c.QPsPerPeer, n.Channels)
	}
	if q := s.Int(qpsKnob.Name); q > 0 && c.DCIs == 0 {
		c.QPsPerPeer = q
	}
	if n.Reserved > 0 {
		c.Reserved, c.ReservedFrom = n.Reserved, n.Channels
	}
	if d := s.Int(dcisKnob.Name); d > 0 && c.DCIs > 0 {
		c.DCIs = d
	}
	if o := s["ordering"]; o != "" {
		ord, ok := ParseOrdering(o)
		if !ok {
			return Config{}, fmt.Errorf("%s: unknown ordering %q (want one of %v)", name, o, OrderingModes())
		}
		c.Ordering = ord
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// SizeSpace is the configurations a sizing study tries: QPs per peer (RC)
// in powers of two up to the channels ch, ch itself and 2·ch (DeepEP
// gives one QP per local expert and needs at least one per channel);
// DCIs (DC) in powers of two up to max(2·ch, 16).
func (m mechanism) SizeSpace(ch int, lists map[string][]int) ([]transport.Sized, error) {
	k, def := qpsKnob, append(transport.PowersOfTwo(ch), ch, 2*ch)
	if m.name == "dc" {
		k, def = dcisKnob, transport.PowersOfTwo(max(2*ch, 16))
	}
	vals, err := transport.SizeList(k.Name, lists, def)
	if err != nil {
		return nil, err
	}
	label := map[string]string{qpsKnob.Name: "qps", dcisKnob.Name: "dcis"}[k.Name]
	var out []transport.Sized
	for _, v := range vals {
		out = append(out, transport.Sized{Settings: transport.Settings{k.Name: fmt.Sprint(v)}, Label: fmt.Sprintf("%s=%d", label, v)})
	}
	return slices.Clip(out), nil
}

// Causes are what the Own times of the transport's deliveries hold:
// context misses, and DCI re-targets under DC.
func (t gdaTransport) Causes() []transport.Cause {
	if t.cfg.DCIs > 0 {
		return dcCauses
	}
	return rcCauses
}
