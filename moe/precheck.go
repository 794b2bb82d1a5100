package moe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/profile"
	"moebench/sim"
	"moebench/transport"
)

// ErrOverCapacity marks a deployment that needs more of a GPU or a NIC than
// the profile's hardware has (CapacityError says which).
var ErrOverCapacity = errors.New("over the hardware's capacity")

// Capacity kinds.
const (
	CapacityMemory = "memory" // the layer's buffers and send queues against gpu.memory_gb
	CapacityQueues = "queues" // send queues per NIC against nic.max_qps
	CapacityWRs    = "wrs"    // work requests a send queue holds against nic.max_qp_wr
)

// LimitReserved is the GPU memory the model's weights and activations
// keep, which the layer's buffers cannot use.
const LimitReserved = "gpu.reserved_gb"

// CapacityError is a deployment over a limit of the hardware: Kind says
// which, Need and Limit the figures, Constant the profile constant that
// states the limit and Source where its value comes from.
type CapacityError struct {
	Kind        string
	Need, Limit int64
	// Queues names the queues when they are a mechanism's own rather
	// than RC QPs (DC's "DCIs"), and Knob the knob that sets them.
	Queues, Knob string
	Constant     string
	Source       string // the constant, its value, its profile and its source
	Detail       string // what makes up Need
	// AtLeast: Need is a bound, the true figure past what 64 bits count.
	AtLeast bool
	// Reserved: Limit is the GPU's memory less what gpu.reserved_gb keeps.
	Reserved bool
}

func (e *CapacityError) Error() string {
	switch e.Kind {
	case CapacityMemory:
		need := report.GB(e.Need)
		if e.AtLeast {
			need = "over " + need
		}
		left := ""
		if e.Reserved {
			left = " left"
		}
		return fmt.Sprintf("%s per GPU (%s), more than the GPU's %s%s (%s)",
			need, e.Detail, report.GB(e.Limit), left, e.Source)
	case CapacityWRs:
		return fmt.Sprintf("%d work requests per send queue (%s), more than the NIC's %d (%s)", e.Need, e.Detail, e.Limit, e.Source)
	}
	what := "QPs"
	if e.Queues != "" {
		what = e.Queues
	}
	return fmt.Sprintf("%d %s per NIC (%s), more than the NIC's %d (%s)", e.Need, what, e.Detail, e.Limit, e.Source)
}

// Is makes errors.Is(err, ErrOverCapacity) hold.
func (e *CapacityError) Is(target error) bool { return target == ErrOverCapacity }

// Precheck reports what makes a layer of shape s on cfg's transport and
// profile impossible, before any routing is generated or any state the
// size of the layer is built: what Validate checks, the queue depth LL
// mode keeps in flight, and the GPU memory and NIC queues the deployment
// takes against what the profile's hardware has. cfg.Routing is ignored.
//
// It also builds the layer's and the transport's models, the transport on
// two ranks, so that the profile records every constant a run of cfg
// reads (profile.Unread) without running it: the models read their
// constants when built, whatever the layer's size.
func Precheck(s Shape, cfg LayerConfig) error { return PrecheckWith(s, cfg, Limits{}) }

// PrecheckWith is Precheck under the library limits of lim, and over the
// limits lim.Over names.
func PrecheckWith(s Shape, cfg LayerConfig, lim Limits) error {
	cfg.Routing = &Routing{Shape: s}
	if err := cfg.onProfile(); err != nil {
		return err
	}
	s = cfg.Routing.Shape
	if err := cfg.Validate(); err != nil {
		return err
	}
	if _, err := ownCausesOf(cfg.Transport); err != nil {
		return err
	}
	if err := cfg.Mode.spec().precheck(s, &cfg); err != nil {
		return err
	}
	if err := checkLimits(s, &cfg, lim); err != nil {
		return err
	}
	if err := checkCapacity(s, &cfg, lim.Over); err != nil {
		return err
	}
	per := max(1, cfg.RanksPerGPU)
	newGPUModelOn(&cfg, per, per)
	env := &transport.Env{E: &sim.Engine{}, Profile: cfg.Profile, Ranks: 2, GPUsPerNode: 1, NVLink: cfg.NVLink,
		Delivered: func(*sim.Engine, transport.Delivery) {}, Log: zap.NewNop()}
	if _, err := cfg.Transport.Open(env); err != nil {
		return fmt.Errorf("transport %s: %w", cfg.Transport.Name(), err)
	}
	return nil
}

// capacity is what a deployment takes of its GPU's memory and its NIC's
// queues, against the profile's limits.
type capacity struct {
	buffer, need int64 // the layer's buffer; with the GPU-resident send queues
	what         string
	atLeast      bool
	memLimit     int64 // the GPU's memory less what the model keeps
	memSource    string
	queues       int64 // per NIC: RC QPs, or a mechanism's own queues
	kind         transport.Resource
	qpLimit      int64
	depth        int64 // work requests one send queue holds; 0: none stated
	wrLimit      int64
	r            transport.Resources
}

// queueWords says what c.queues counts.
func (c *capacity) queueWords() string {
	if c.kind.Queues != "" {
		return c.kind.Queues + " per NIC"
	}
	return "QPs per NIC"
}

// capacityOf works out the layer's buffer (DeepEP's size for the mode)
// and the transport's send queues, and its queues per NIC, from the
// transport's estimate of the bare configuration (no traffic needed:
// these are what it allocates), and reads every capacity limit.
func capacityOf(s Shape, cfg *LayerConfig) (capacity, error) {
	var c capacity
	layer, _ := Channels(s, cfg.Mode, cfg.NumSMs, cfg.Background)
	// The formulas' int64 wraps past 2^63 bytes, far past any GPU: the
	// mode bounds them in floating point too.
	var bound float64
	c.buffer, bound, c.what = cfg.Mode.spec().buffer(s, cfg.NumSMs)
	c.atLeast = bound > math.MaxInt64/2
	if c.atLeast {
		c.buffer = math.MaxInt64 / 2
	}
	if est, ok := cfg.Transport.(transport.Estimator); ok {
		e, err := est.Estimate(&transport.Demand{Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, NVLDomain: s.DomainGPUs(), NVLink: cfg.NVLink, Channels: layer}, cfg.Profile)
		if err != nil {
			return c, fmt.Errorf("transport %s: %w", cfg.Transport.Name(), err)
		}
		c.r = e.Resources
	}
	p := cfg.Profile
	c.need = c.buffer
	if !c.r.HostQueues && c.r.QueueBytesPerRank > 0 {
		c.need += c.r.QueueBytesPerRank
		c.what += fmt.Sprintf(", plus %s of send queues", report.GB(c.r.QueueBytesPerRank))
	}
	mem, reserved := p.Get(LimitMemory), p.Get(LimitReserved)
	c.memLimit, c.memSource = int64(max(0, mem-reserved)*1e9), source(p, LimitMemory)
	if reserved > 0 {
		c.memSource += ", less " + source(p, LimitReserved)
	}
	// A mechanism's own send queues in place of QPs (DC's initiators)
	// count against the same limit, and not per peer.
	c.queues = int64(c.r.QPsPerNIC)
	for _, d := range transport.Held() {
		if v := c.r.Own[d.Name]; d.Queues != "" && v > 0 {
			c.queues, c.kind = max(c.queues, int64(v)), d
		}
	}
	c.qpLimit = int64(p.Get(LimitQPs))
	c.depth, c.wrLimit = int64(max(0, cfg.Transport.QueueDepth())), int64(p.Get(LimitQPWR))
	return c, nil
}

// checkCapacity refuses a layer whose buffer and GPU-resident send queues
// are more than the GPU's memory leaves it, or whose queues per NIC are
// more than the NIC's, but for a limit over names.
func checkCapacity(s Shape, cfg *LayerConfig, over []string) error {
	c, err := capacityOf(s, cfg)
	if err != nil {
		return err
	}
	p := cfg.Profile
	if c.need > c.memLimit && !slices.Contains(over, LimitMemory) {
		return &CapacityError{Kind: CapacityMemory, Need: c.need, Limit: c.memLimit, Constant: LimitMemory, Source: c.memSource, Detail: c.what, AtLeast: c.atLeast,
			Reserved: p.Get(LimitReserved) > 0}
	}
	queues, kind := c.queues, c.kind
	if limit := c.qpLimit; queues > limit && !slices.Contains(over, LimitQPs) {
		detail := fmt.Sprintf("%s on %d ranks", cfg.Transport.Name(), s.Ranks)
		if kind.Queues == "" && s.Ranks > 0 {
			// Queues are counted per NIC: a rank's over its NICs, or
			// those of every GPU sharing one.
			nics, share := max(1, int64(p.Get("topo.nics_per_gpu"))), max(1, int64(p.Get("topo.gpus_per_nic")))
			detail = fmt.Sprintf("%d ranks × %d per peer", s.Ranks, queues*nics/share/int64(s.Ranks))
			switch {
			case nics > 1:
				detail += fmt.Sprintf(" over %d NICs a GPU", nics)
			case share > 1:
				detail = fmt.Sprintf("%d GPUs a NIC × %s", share, detail)
			}
		}
		return &CapacityError{Kind: CapacityQueues, Need: queues, Limit: limit, Queues: kind.Queues, Knob: kind.Knob, Constant: LimitQPs, Source: source(p, LimitQPs), Detail: detail}
	}
	if s.Ranks > hw.MaxNICs || queues >= hw.MaxQPs {
		// The transports refuse these when opened (a NIC given more
		// queues by --set); say so before then.
		return field.Errorf("ranks", "%d ranks with %d queues per NIC, more than the model addresses (%d NICs of %d queues)", s.Ranks, queues, hw.MaxNICs, hw.MaxQPs)
	}
	return nil
}

// source is where the profile's value of name comes from.
func source(p *profile.Profile, name string) string {
	c, _ := p.Constant(name)
	return fmt.Sprintf("%s = %s, profile %s: %s", name, strconv.FormatFloat(c.Value, 'g', -1, 64), p.Name, c.Source)
}
