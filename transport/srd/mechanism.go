package srd

import (
	"fmt"

	"moebench/profile"
	"moebench/transport"
)

// The mechanism as it declares itself to the seam.
func init() { transport.Register(mechanism{}) }

// Name is the mechanism's name, as --transport and presets take it.
const Name = "srd"

var (
	ahMiss   = transport.Cause{Name: "ah_miss", Help: "EFA device time fetching an evicted address handle and peer state"}
	flagWait = transport.Cause{Name: "flag_wait", Help: "a count or flag held until the writes it covers completed (EFA has no RDMA atomics), then posted as a write with immediate"}
	causes   = []transport.Cause{ahMiss, flagWait}

	qpsKnob = transport.Knob{Name: "srd-qps", Column: "srd qps", Field: "", Label: "SRD QPs per EFA device",
		Help: "srd: SRD QPs a rank opens on each EFA device, overriding the preset's", Sizes: "1,2,4", Min: 1, Max: maxQPs}
	// The proxy's knobs are mini-proxy's by name: one flag sets a
	// proxy's workers and rings whichever mechanism carries it.
	workersKnob = transport.Knob{Name: "workers", Column: "workers", Field: "workers", Label: "proxy workers per GPU",
		Help: "proxy: CPU workers per rank, overriding the preset's", Min: 1, Max: 1 << 10}
	ringsKnob = transport.Knob{Name: "rings", Column: "rings", Field: "rings", Label: "proxy rings per GPU",
		Help: "proxy: descriptor rings per rank, overriding the preset's", Min: 1, Max: 1 << 12}
	knobs = []transport.Knob{qpsKnob, workersKnob, ringsKnob}
)

// The resources an SRD transport holds beyond QPs, by their
// Resources.Own names.
const (
	// AHResource: peers a device holds address handles for.
	AHResource = "address handles/NIC"
	// The proxy's, named as mini-proxy names them.
	RingsResource   = "proxy rings"
	WorkersResource = "proxy workers"
)

var holds = []transport.Resource{
	{Name: AHResource, Field: "address_handles_per_nic", Words: "address handles per EFA device", Size: true},
	{Name: RingsResource, Field: "proxy_rings", Words: "proxy rings per GPU"},
	{Name: WorkersResource, Field: "proxy_workers", Words: "proxy workers per GPU", Size: true,
		Host: "proxy cores/host", HostField: "proxy_cores_per_host", Dear: true,
		Held: "%d proxy cores per GPU, %d per host", None: "no proxy cores: the GPU posts its own work requests"},
}

type mechanism struct{}

var (
	_ transport.Mechanism = mechanism{}
	_ transport.Sizer     = mechanism{}
	_ transport.Holder    = mechanism{}
	_ transport.HostBound = mechanism{}
	_ transport.Transport = Transport{}
)

// Holds declares the address handles and a proxy's rings and workers
// (the latter as mini-proxy declares them: the first declaration of a
// name is the one the seam keeps).
func (mechanism) Holds() []transport.Resource { return holds }

// Host: SRD runs only on EFA hosts (efa.generation above 0).
func (mechanism) Host(p *profile.Profile) error { return efaHost(p) }

func (mechanism) Name() string { return Name }
func (mechanism) Summary() string {
	return "EFA's Scalable Reliable Datagram: SRD QPs per device and address handles, unordered multipath delivery, flags as writes with immediate after their data; posted from the GPU or by CPU workers"
}
func (mechanism) Knobs() []transport.Knob   { return knobs }
func (mechanism) Causes() []transport.Cause { return causes }

// Build applies s to cfg, a Config. Reserved background traffic needs no
// queues of its own: a datagram queue does not hold later WQEs behind
// earlier ones.
func (m mechanism) Build(cfg any, name string, s transport.Settings, _ transport.Needs) (transport.Transport, error) {
	c, ok := cfg.(Config)
	if !ok {
		return nil, fmt.Errorf("srd: configuration is a %T, want an srd.Config", cfg)
	}
	if k := s.Unknown(knobs); k != "" {
		return nil, fmt.Errorf("%s: srd takes no --%s", name, k)
	}
	if v := s.Int(qpsKnob.Name); v > 0 {
		c.QPsPerNIC = v
	}
	for _, k := range []transport.Knob{workersKnob, ringsKnob} {
		v := s.Int(k.Name)
		if v == 0 {
			continue
		}
		if c.Style != Proxy {
			return nil, fmt.Errorf("%s posts from the GPU: --%s applies to a proxy-posted preset", name, k.Name)
		}
		if k.Name == workersKnob.Name {
			c.Workers = v
			c.Rings = max(c.Rings, v)
		} else {
			c.Rings = v
		}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Transport{cfg: c, name: name}, nil
}

// SizeSpace is the configurations a sizing study tries: 1, 2 and 4 SRD
// QPs per device (a datagram QP serves every peer, so more only spread
// the device's doorbells and scheduler turns).
func (mechanism) SizeSpace(_ int, lists map[string][]int) ([]transport.Sized, error) {
	v, err := transport.SizeList(qpsKnob.Name, lists, []int{1, 2, 4})
	if err != nil {
		return nil, err
	}
	var out []transport.Sized
	for _, n := range v {
		if n > maxQPs {
			return nil, fmt.Errorf("--%s %d: must be at most %d", qpsKnob.Name, n, maxQPs)
		}
		out = append(out, transport.Sized{Settings: transport.Settings{qpsKnob.Name: fmt.Sprint(n)}, Label: fmt.Sprintf("qps=%d", n)})
	}
	return out, nil
}

// Transport is an SRD configuration ready to open.
type Transport struct {
	cfg  Config
	name string
}

// Config is the transport's configuration.
func (t Transport) Config() Config { return t.cfg }

func (t Transport) Name() string            { return t.name }
func (Transport) Causes() []transport.Cause { return causes }
func (Transport) QueueDepth() int           { return 0 }
func (Transport) CarriesNVLink() bool       { return true }
