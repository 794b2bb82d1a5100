package moe

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"go.uber.org/zap"

	"moebench/hw"
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
)

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
}

func (e *CapacityError) Error() string {
	switch e.Kind {
	case CapacityMemory:
		need := gbytes(e.Need)
		if e.AtLeast {
			need = "over " + need
		}
		return fmt.Sprintf("%s per GPU (%s), more than the GPU's %s (%s)",
			need, e.Detail, gbytes(e.Limit), e.Source)
	}
	what := "QPs"
	if e.Queues != "" {
		what = e.Queues
	}
	return fmt.Sprintf("%d %s per NIC (%s), more than the NIC's %d (%s)", e.Need, what, e.Detail, e.Limit, e.Source)
}

// Is makes errors.Is(err, ErrOverCapacity) hold.
func (e *CapacityError) Is(target error) bool { return target == ErrOverCapacity }

// gbytes prints bytes in decimal gigabytes, as GPU memory is sold, with
// binary units beside when large.
func gbytes(b int64) string {
	g, prec := float64(b)/1e9, 3
	switch {
	case g >= 100:
		prec = 0
	case g >= 10:
		prec = 1
	}
	s := strconv.FormatFloat(g, 'f', prec, 64) + " GB"
	if b >= 1<<40 {
		s += " (" + strconv.FormatFloat(float64(b)/(1<<40), 'f', 1, 64) + " TiB)"
	}
	return s
}

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
func Precheck(s Shape, cfg LayerConfig) error {
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
	if cfg.Mode == LL {
		if s.TopK > warpsPerSM {
			return fmt.Errorf("top-k: %d exceeds the %d warps an LL kernel block posts from", s.TopK, warpsPerSM)
		}
		if err := checkDepth(s, cfg.Transport.QueueDepth()); err != nil {
			return err
		}
	}
	if err := checkCapacity(s, &cfg); err != nil {
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

// checkCapacity compares the layer's buffer (DeepEP's size for the mode)
// and the transport's send queues with the GPU's memory, and its queues
// per NIC with the NIC's, from the transport's estimate of the bare
// configuration (no traffic needed: these are what it allocates).
func checkCapacity(s Shape, cfg *LayerConfig) error {
	layer, _ := Channels(s, cfg.Mode, cfg.NumSMs, cfg.Background)
	buffer, what := LLBufferBytes(s), fmt.Sprintf("DeepEP's LL buffer for %d experts × %d tokens × hidden %d", s.Physical(), s.Tokens, s.Hidden)
	if cfg.Mode == Normal {
		normal, _ := Channels(s, Normal, cfg.NumSMs, Background{})
		buffer, what = NormalBufferBytes(s, normal), fmt.Sprintf("DeepEP's normal-mode buffers for %d channels, %d NVLink domains × %d GPUs, hidden %d", normal, s.Domains(), s.DomainGPUs(), s.Hidden)
	}
	// The formulas' int64 wraps past 2^63 bytes, far past any GPU: bound
	// them in floating point first.
	bound := 8 * float64(s.Physical()) * float64(s.Tokens) * float64(2*s.Hidden+LLHeaderBytes)
	if cfg.Mode == Normal {
		normal, _ := Channels(s, Normal, cfg.NumSMs, Background{})
		bound = float64(normal) * float64(256*s.Domains()+288*s.DomainGPUs()) * float64(s.NormalTokenBytes())
	}
	atLeast := bound > math.MaxInt64/2
	if atLeast {
		buffer = math.MaxInt64 / 2
	}
	var r transport.Resources
	if est, ok := cfg.Transport.(transport.Estimator); ok {
		e, err := est.Estimate(&transport.Demand{Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, NVLDomain: s.DomainGPUs(), NVLink: cfg.NVLink, Channels: layer}, cfg.Profile)
		if err != nil {
			return fmt.Errorf("transport %s: %w", cfg.Transport.Name(), err)
		}
		r = e.Resources
	}
	p := cfg.Profile
	need := buffer
	if !r.HostQueues && r.QueueBytesPerRank > 0 {
		need += r.QueueBytesPerRank
		what += fmt.Sprintf(", plus %s of send queues", gbytes(r.QueueBytesPerRank))
	}
	if limit := int64(p.Get("gpu.memory_gb") * 1e9); need > limit {
		return &CapacityError{Kind: CapacityMemory, Need: need, Limit: limit, Constant: "gpu.memory_gb", Source: source(p, "gpu.memory_gb"), Detail: what, AtLeast: atLeast}
	}
	// A mechanism's own send queues in place of QPs (DC's initiators)
	// count against the same limit, and not per peer.
	queues, kind := int64(r.QPsPerNIC), transport.Resource{}
	for _, d := range transport.Held() {
		if v := r.Own[d.Name]; d.Queues != "" && v > 0 {
			queues, kind = max(queues, int64(v)), d
		}
	}
	if limit := int64(p.Get("nic.max_qps")); queues > limit {
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
		return &CapacityError{Kind: CapacityQueues, Need: queues, Limit: limit, Queues: kind.Queues, Knob: kind.Knob, Constant: "nic.max_qps", Source: source(p, "nic.max_qps"), Detail: detail}
	}
	if s.Ranks > hw.MaxNICs || queues >= hw.MaxQPs {
		// The transports refuse these when opened (a NIC given more
		// queues by --set); say so before then.
		return fmt.Errorf("ranks: %d ranks with %d queues per NIC, more than the model addresses (%d NICs of %d queues)", s.Ranks, queues, hw.MaxNICs, hw.MaxQPs)
	}
	return nil
}

// source is where the profile's value of name comes from.
func source(p *profile.Profile, name string) string {
	c, _ := p.Constant(name)
	return fmt.Sprintf("%s = %s, profile %s: %s", name, strconv.FormatFloat(c.Value, 'g', -1, 64), p.Name, c.Source)
}
