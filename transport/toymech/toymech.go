// Package toymech is a minimal transport mechanism for tests: it shows,
// and the tests prove, that a mechanism is one package that declares
// itself to the seam. Nothing in moe, sizing or the CLI names it.
//
// A "toy" rank sends through Lanes independent FIFO lanes, chosen by the
// operation's channel; a lane pays a fixed setup per operation, then
// serializes the payload at a fixed rate, and the bytes arrive a fixed
// wire latency later. Its constants are illustrative, not a model of any
// hardware.
//
// Register adds the mechanism and its preset (for tests that want it in
// the registry; a real mechanism registers in init and is imported by
// main).
package toymech

import (
	"fmt"
	"math"
	"sync"

	"moebench/sim"
	"moebench/transport"
	"moebench/transport/preset"
)

// Config is a toy transport.
type Config struct {
	Lanes int // FIFO lanes per rank
}

// Illustrative costs.
const (
	issue    = 200 * sim.Nanosecond // the warp's post
	setup    = 500 * sim.Nanosecond // per operation, on its lane: the "lane_setup" cause
	wire     = 2 * sim.Microsecond
	bytesPer = 20.0 // payload bytes per ns (20 GB/s)
)

var (
	lanesKnob = transport.Knob{Name: "lanes", Column: "lanes", Field: "", Label: "toy lanes per rank",
		Help: "toy: FIFO lanes per rank, overriding the preset's", Sizes: "1,2,4", Min: 1, Max: 64}
	setupCause = transport.Cause{Name: "lane_setup", Help: "the toy lane's per-operation setup"}
	// A toy rank's lanes are a kind of resource of its own, which sizing
	// weighs before QPs and may bound.
	lanesResource = transport.Resource{Name: "toy lanes/rank", Field: "toy_lanes_per_rank", Words: "toy lanes per rank",
		Size: true, Dear: true, Limit: &transport.Limit{Flag: "max-toy-lanes", Help: "reject toy candidates with more lanes per rank (-1 = no limit)"}}
)

// LaneBytes is the simulation memory a toy lane declares per rank
// (transport.Footprint): illustrative, and large, so that a memory
// budget refuses a layer of many lanes before it runs.
const LaneBytes = 64 << 20

type mechanism struct{}

var (
	_ transport.Mechanism = mechanism{}
	_ transport.Sizer     = mechanism{}
	_ transport.Holder    = mechanism{}
	_ transport.Footprint = mechanism{}
	_ transport.Transport = toy{}
	_ transport.Conn      = (*conn)(nil)
)

func (mechanism) Name() string                { return "toy" }
func (mechanism) Summary() string             { return "a test mechanism: FIFO lanes with a fixed setup and rate" }
func (mechanism) Knobs() []transport.Knob     { return []transport.Knob{lanesKnob} }
func (mechanism) Causes() []transport.Cause   { return []transport.Cause{setupCause} }
func (mechanism) Holds() []transport.Resource { return []transport.Resource{lanesResource} }

// SimCost is LaneBytes a lane of each rank, and a queue per lane; lanes
// not set take the largest of the default grid, 4.
func (mechanism) SimCost(ranks, _ int, s transport.Settings) transport.SimCost {
	lanes := int64(s.Int(lanesKnob.Name))
	if lanes == 0 {
		lanes = 4
	}
	return transport.SimCost{Queues: int64(ranks) * lanes, Bytes: LaneBytes * float64(int64(ranks)*lanes)}
}

func (m mechanism) Build(cfg any, name string, s transport.Settings, _ transport.Needs) (transport.Transport, error) {
	c, ok := cfg.(Config)
	if !ok {
		return nil, fmt.Errorf("toy: configuration is a %T, want a toymech.Config", cfg)
	}
	if k := s.Unknown(m.Knobs()); k != "" {
		return nil, fmt.Errorf("toy takes no --%s", k)
	}
	if v := s.Int(lanesKnob.Name); v > 0 {
		c.Lanes = v
	}
	if c.Lanes < 1 {
		return nil, fmt.Errorf("toy: lanes must be at least 1, got %d", c.Lanes)
	}
	return toy{cfg: c, name: name}, nil
}

func (mechanism) SizeSpace(_ int, lists map[string][]int) ([]transport.Sized, error) {
	v, err := transport.SizeList(lanesKnob.Name, lists, []int{1, 2, 4})
	if err != nil {
		return nil, err
	}
	var out []transport.Sized
	for _, n := range v {
		out = append(out, transport.Sized{Settings: transport.Settings{lanesKnob.Name: fmt.Sprint(n)}, Label: fmt.Sprintf("lanes=%d", n)})
	}
	return out, nil
}

var once sync.Once

// Register adds the toy mechanism and its preset, "toy", once.
func Register() {
	once.Do(func() {
		transport.Register(mechanism{})
		preset.Register(preset.Preset{Name: "toy", Mechanism: "toy", Config: Config{Lanes: 1},
			Description: "the test mechanism with one lane per rank", Source: "illustrative constants (package toymech)"})
	})
}

type toy struct {
	cfg  Config
	name string
}

func (t toy) Name() string            { return t.name }
func (toy) Causes() []transport.Cause { return []transport.Cause{setupCause} }
func (toy) QueueDepth() int           { return 0 }
func (t toy) Open(env *transport.Env) (transport.Conn, error) {
	c := &conn{env: env, lanes: t.cfg.Lanes, free: make([]sim.Time, env.Ranks*t.cfg.Lanes), used: map[[2]int]bool{}}
	c.id = env.E.Register(c)
	return c, nil
}

type conn struct {
	env   *transport.Env
	lanes int
	free  []sim.Time // per (rank, lane): when the lane is next idle
	id    sim.HandlerID
	inFly []transport.Delivery
	used  map[[2]int]bool // (source, destination) pairs that carried traffic
}

// Post serves op on its lane in arrival order and resumes the warp after
// the issue cost.
func (c *conn) Post(e *sim.Engine, w *transport.Warp, op transport.Op) {
	start := w.T.T
	w.T.T += issue
	lane := op.Src*c.lanes + op.Channel%c.lanes
	served := max(w.T.T, c.free[lane])
	sent := served + setup + sim.Time(math.Ceil(float64(op.Bytes)/bytesPer))*sim.Nanosecond
	c.free[lane] = sent
	arrived := sent + wire
	c.used[[2]int{op.Src, op.Dst}] = true
	c.inFly = append(c.inFly, transport.Delivery{Op: op, Times: transport.Times{IssueStart: start, IssueEnd: w.T.T, Posted: w.T.T,
		Served: served, Sent: sent, Arrived: arrived, Visible: arrived, Own: [transport.MaxOwnCauses]sim.Time{setup}}})
	e.At(arrived, c.id, 0, int64(len(c.inFly)-1))
	w.Resume(e, w)
}

// Handle delivers an operation whose payload arrived.
func (c *conn) Handle(e *sim.Engine, _ int32, arg int64) { c.env.Delivered(e, c.inFly[arg]) }

func (c *conn) Resources() transport.Resources {
	return transport.Resources{QPsPerNIC: c.lanes, ActiveConnPerNIC: (len(c.used) + c.env.Ranks - 1) / c.env.Ranks,
		Own: map[string]int{lanesResource.Name: c.lanes}}
}
