package proxy

import (
	"fmt"

	"moebench/profile"
	"moebench/transport"
)

// mini-proxy as it declares itself to the seam.
func init() { transport.Register(mechanism{}) }

// The knobs' upper bounds are past any deployment (a rank's proxy is a
// few CPU threads polling tens of rings) and keep a mistyped value from
// running for minutes.
var (
	connMiss    = transport.Cause{Name: "conn_miss", Help: "NIC time fetching a worker QP's context"}
	workersKnob = transport.Knob{Name: "workers", Column: "workers", Field: "workers", Label: "proxy workers per GPU",
		Help: "proxy: CPU workers per rank, overriding the preset's", Sizes: "1,2,4,8,16", Min: 1, Max: 1 << 10}
	batchKnob = transport.Knob{Name: "batch", Column: "batch", Field: "batch", Label: "work requests chained per post",
		Help: "proxy: work requests chained per post, overriding the preset's", Sizes: "1,4,16", Min: 1, Max: 1 << 16}
	ringsKnob = transport.Knob{Name: "rings", Column: "rings", Field: "rings", Label: "proxy rings per GPU",
		Help: "proxy: descriptor rings per rank, overriding the preset's", Sizes: "one and eight per worker", Min: 1, Max: 1 << 12}
	knobs = []transport.Knob{workersKnob, batchKnob, ringsKnob}
)

// The resources a proxy holds beyond QPs, by their Resources.Own names:
// host rings and CPU workers per rank (GPU). Workers are cores, the
// dearest thing a deployment gives a transport.
const (
	RingsResource   = "proxy rings"
	WorkersResource = "proxy workers"
)

var holds = []transport.Resource{
	{Name: RingsResource, Field: "proxy_rings", Words: "proxy rings per GPU"},
	{Name: WorkersResource, Field: "proxy_workers", Words: "proxy workers per GPU", Size: true,
		Host: "proxy cores/host", HostField: "proxy_cores_per_host", Dear: true,
		Held: "%d proxy cores per GPU, %d per host", None: "no proxy cores: the GPU posts its own work requests",
		Limit: &transport.Limit{Flag: "proxy-cores", Help: "reject proxies with more CPU workers per GPU (-1 = no limit)"}},
}

// Bytes of the simulation beyond mini-gda's, fit with the workload's
// memory (moe.EstimateCost) to the peak RSS of moebench run --transport
// mini-proxy on linux/amd64 (256 to 2,048 ranks): a host ring's state,
// and per LL op a record, a producer while it waits for ring space and a
// share of a worker's send queues, side by side and in turn.
const simBytesPerRing = 1 << 10

var (
	simSide   = transport.OpBytes{PerPair: 263, PerSel: 220}
	simInTurn = transport.OpBytes{PerPair: 158}
)

type mechanism struct{}

var (
	_ transport.Mechanism = mechanism{}
	_ transport.Sizer     = mechanism{}
	_ transport.Holder    = mechanism{}
	_ transport.Footprint = mechanism{}
	_ transport.HostBound = mechanism{}
	_ transport.Transport = Transport{}
	_ transport.Estimator = Transport{}
)

func (mechanism) Name() string { return "mini-proxy" }

// Host: the workers post RC work requests, which an EFA host lacks.
func (mechanism) Host(p *profile.Profile) error { return transport.RCHost(p) }
func (mechanism) Summary() string {
	return "GPU threads enqueue 16 B descriptors into host rings; CPU workers chain and post the work requests"
}
func (mechanism) Knobs() []transport.Knob     { return knobs }
func (mechanism) Causes() []transport.Cause   { return []transport.Cause{connMiss} }
func (mechanism) Holds() []transport.Resource { return holds }

// SimCost is a layer's rings (as the knob sets them, at least 64 a rank),
// four worker QPs per peer, and the records a proxy keeps per LL op.
func (mechanism) SimCost(ranks, _ int, s transport.Settings) transport.SimCost {
	r := int64(ranks)
	return transport.SimCost{Queues: r * r * 4, Bytes: simBytesPerRing * float64(r*int64(max(s.Int(ringsKnob.Name), 64))),
		Side: simSide, InTurn: simInTurn}
}

// Build applies s and n to cfg, a Config.
func (m mechanism) Build(cfg any, name string, s transport.Settings, n transport.Needs) (transport.Transport, error) {
	c, ok := cfg.(Config)
	if !ok {
		return nil, fmt.Errorf("mini-proxy: configuration is a %T, want a proxy.Config", cfg)
	}
	if k := s.Unknown(knobs); k != "" {
		return nil, fmt.Errorf("mini-proxy takes no --%s", k)
	}
	c, err := c.With(s, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return Transport{cfg: c, name: name}, nil
}

// With is c for a workload of needs n with the knobs of s (workers,
// batch, rings) over its own values. Reserved background gets rings of
// its own past the layer's, which keep their number.
func (c Config) With(s transport.Settings, n transport.Needs) (Config, error) {
	if v := s.Int(workersKnob.Name); v > 0 {
		c.Workers = v
	}
	if v := s.Int(batchKnob.Name); v > 0 {
		c.Batch = v
	}
	if v := s.Int(ringsKnob.Name); v > 0 {
		c.Rings = v
	}
	if n.Reserved > 0 {
		c.BackgroundRings, c.BackgroundChannel0 = n.Reserved, n.Channels
		c.Rings += n.Reserved
	}
	return c, c.Validate()
}

// SizeSpace is the configurations a sizing study tries: workers 1-16 in
// powers of two, rings one or eight per worker (never fewer than the
// workers), batches of 1, 4 and 16.
func (mechanism) SizeSpace(_ int, lists map[string][]int) ([]transport.Sized, error) {
	workers, err := transport.SizeList(workersKnob.Name, lists, []int{1, 2, 4, 8, 16})
	if err != nil {
		return nil, err
	}
	batch, err := transport.SizeList(batchKnob.Name, lists, []int{1, 4, 16})
	if err != nil {
		return nil, err
	}
	var out []transport.Sized
	for _, t := range workers {
		rings, err := transport.SizeList(ringsKnob.Name, lists, []int{t, 8 * t})
		if err != nil {
			return nil, err
		}
		for _, r := range rings {
			if r < t {
				continue // a worker without a ring
			}
			for _, b := range batch {
				out = append(out, transport.Sized{
					Settings: transport.Settings{workersKnob.Name: fmt.Sprint(t), ringsKnob.Name: fmt.Sprint(r), batchKnob.Name: fmt.Sprint(b)},
					Label:    fmt.Sprintf("T%d/R%d/B%d", t, r, b)})
			}
		}
	}
	return out, nil
}

// Causes are what the Own times of the transport's deliveries hold.
func (Transport) Causes() []transport.Cause { return []transport.Cause{connMiss} }

// QueueDepth is 0: the GPU writes descriptors into host rings, not send
// queues.
func (Transport) QueueDepth() int { return 0 }
