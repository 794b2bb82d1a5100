package moe

import (
	"errors"
	"fmt"
	"math"
	"moebench/transport"
	"slices"
	"strconv"
)

// ErrOverLimit marks a deployment over a limit a library's own code puts
// on it (LimitError says which). It is also ErrOverCapacity, so that what
// refuses a deployment the hardware cannot hold refuses this one too.
var ErrOverLimit = errors.New("over a library's limit")

// The figures a library limit bounds and the limit itself are declared
// where presets can name them without the layer (transport); the layer
// measures them.
type (
	Figure       = transport.Figure
	LibraryLimit = transport.LibraryLimit
)

// The figures a library's limit may bound.
const (
	FigureRanks        = transport.FigureRanks
	FigureNodes        = transport.FigureNodes
	FigureTopK         = transport.FigureTopK
	FigureLocalExperts = transport.FigureLocalExperts
	FigureRDMABytes    = transport.FigureRDMABytes
)

// holds reports whether l bounds a layer of mode m.
func holds(l LibraryLimit, m Mode) bool {
	return len(l.Modes) == 0 || slices.Contains(l.Modes, m.String())
}

// NormalBufferChannels are normal mode's channels as DeepEP sizes its
// buffers for them (num_sms/2; numSMs 0 is DeepEP's choice), without the
// second QP per channel that Channels counts across NVLink domains for the
// credit returns: NormalBufferBytes's channels.
func NormalBufferChannels(numSMs int) int { return max(1, normalSMsOr(numSMs)/2) }

// figure is f for a layer of shape s in mode m on channels channels.
func figure(f Figure, s Shape, m Mode, channels int) int64 {
	switch f {
	case FigureRanks:
		return int64(s.Ranks)
	case FigureNodes:
		return int64(s.Nodes())
	case FigureTopK:
		return int64(s.TopK)
	case FigureLocalExperts:
		return int64(s.LocalExperts())
	case FigureRDMABytes:
		return m.spec().rdmaBytes(s, channels)
	}
	return 0
}

// llBound is LLBufferBytes in floating point, where int64 would wrap.
func llBound(s Shape) float64 {
	return 8 * float64(s.Physical()) * float64(s.Tokens) * float64(2*s.Hidden+LLHeaderBytes)
}

// satBytes is b, or the most 63 bits hold halved when bound says the
// exact figure wrapped.
func satBytes(b int64, bound float64) int64 {
	if bound > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return b
}

// LimitError is a deployment over a library's limit.
type LimitError struct {
	Limit LibraryLimit
	Need  int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %s %s, more than %s, %s (%s)",
		e.Limit.Name, strconv.FormatInt(e.Need, 10), e.Limit.Figure, strconv.FormatInt(e.Limit.Max, 10), e.Limit.Words, e.Limit.Source)
}

// Is makes errors.Is(err, ErrOverLimit) and errors.Is(err,
// ErrOverCapacity) hold.
func (e *LimitError) Is(target error) bool {
	return target == ErrOverLimit || target == ErrOverCapacity
}

// Limits are what a deployment is held to beyond the hardware's
// capacity, and which limits it may go over.
type Limits struct {
	// Library are the library's own limits on the deployment (its
	// preset's).
	Library []LibraryLimit
	// Over names limits (a LibraryLimit's name, or a capacity constant:
	// LimitMemory, LimitQPs, LimitQPWR) a layer may go over.
	Over []string
}

// Usage is a deployment's figure against one limit: the headroom the
// reports show.
type Usage struct {
	// Name is the limit's, as an override names it: a profile constant
	// (gpu.memory_gb, nic.max_qps, nic.max_qp_wr) or a library's limit.
	Name string `json:"name"`
	// What says what Used counts, e.g. "QPs per NIC".
	What  string `json:"what"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
	// Source is where the limit's value comes from.
	Source string `json:"source"`
	// Over: Used is past Limit, and the run went on only because the
	// limit was overridden.
	Over bool `json:"over,omitempty"`
}

// Share is Used as a fraction of Limit.
func (u Usage) Share() float64 {
	if u.Limit <= 0 {
		return math.Inf(1)
	}
	return float64(u.Used) / float64(u.Limit)
}

// Limit names of the hardware's limits (profile constants).
const (
	LimitMemory = "gpu.memory_gb"
	LimitQPs    = "nic.max_qps"
	LimitQPWR   = "nic.max_qp_wr"
)

// Headroom is what a layer of shape s on cfg's transport and profile
// takes of each limit it is under: the GPU's memory less what the model
// keeps (gpu.reserved_gb), the NIC's queues and the work requests one
// queue holds, and the library limits of lim.Library that hold in its
// mode; Usage.Over marks those over which lim.Over let it go. It builds
// no layer.
func Headroom(s Shape, cfg LayerConfig, lim Limits) ([]Usage, error) {
	cfg.Routing = &Routing{Shape: s}
	if err := cfg.onProfile(); err != nil {
		return nil, err
	}
	s = cfg.Routing.Shape
	c, err := capacityOf(s, &cfg)
	if err != nil {
		return nil, err
	}
	over := func(name string, used, limit int64) bool {
		return used > limit && slices.Contains(lim.Over, name)
	}
	out := []Usage{
		{Name: LimitMemory, What: "bytes per GPU", Used: c.need, Limit: c.memLimit, Source: c.memSource, Over: over(LimitMemory, c.need, c.memLimit)},
		{Name: LimitQPs, What: c.queueWords(), Used: c.queues, Limit: c.qpLimit, Source: source(cfg.Profile, LimitQPs), Over: over(LimitQPs, c.queues, c.qpLimit)},
	}
	if c.depth > 0 {
		out = append(out, Usage{Name: LimitQPWR, What: "work requests per send queue", Used: c.depth, Limit: c.wrLimit,
			Source: source(cfg.Profile, LimitQPWR), Over: over(LimitQPWR, c.depth, c.wrLimit)})
	}
	channels := NormalBufferChannels(cfg.NumSMs)
	for _, l := range lim.Library {
		if !holds(l, cfg.Mode) {
			continue
		}
		v := figure(l.Figure, s, cfg.Mode, channels)
		out = append(out, Usage{Name: l.Name, What: string(l.Figure), Used: v, Limit: l.Max, Source: l.Source, Over: over(l.Name, v, l.Max)})
	}
	return out, nil
}

// checkLimits refuses a layer over one of lim.Library or over the work
// requests a NIC's queue holds, but those lim.Over names.
func checkLimits(s Shape, cfg *LayerConfig, lim Limits) error {
	for _, l := range lim.Library {
		if err := l.Validate(); err != nil {
			return err
		}
	}
	if d := int64(cfg.Transport.QueueDepth()); d > 0 && !slices.Contains(lim.Over, LimitQPWR) {
		if limit := int64(cfg.Profile.Get(LimitQPWR)); d > limit {
			return &CapacityError{Kind: CapacityWRs, Need: d, Limit: limit, Constant: LimitQPWR, Source: source(cfg.Profile, LimitQPWR),
				Detail: cfg.Transport.Name() + "'s send queue depth"}
		}
	}
	channels := NormalBufferChannels(cfg.NumSMs)
	for _, l := range lim.Library {
		if !holds(l, cfg.Mode) || slices.Contains(lim.Over, l.Name) {
			continue
		}
		if v := figure(l.Figure, s, cfg.Mode, channels); v > l.Max {
			return &LimitError{Limit: l, Need: v}
		}
	}
	return nil
}
