package sweep

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"moebench/hw"
	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
)

// Layer is what every point of a run shares: the kernels' options, the
// experts' compute and the limits to run over.
type Layer struct {
	NumSMs    int  // 0: DeepEP's choice
	Chunk     int  // normal mode's tokens per write; 0: 16
	NoPayload bool // skip the payload checksums
	Compute   Compute
	Over      []string // limits to run over, by name
	Log       *zap.Logger
}

// Compute is the experts' compute put into the layer: none without
// schedules.
type Compute struct {
	Workload string
	Scheds   []moe.Overlap // the first is the layer's; each further one is modelled beside it
	Layers   int           // MoE layers a step
}

// Config is the compute of the workload's experts on prof for a layer of
// shape s in mode, or nil without schedules.
func (c Compute) Config(s moe.Shape, mode moe.Mode, prof *profile.Profile) (*moe.ComputeConfig, error) {
	if len(c.Scheds) == 0 {
		return nil, nil
	}
	w, err := workloads.Get(c.Workload)
	if err != nil {
		return nil, input(field.Errorf("workload", "%w", err))
	}
	cc := &moe.ComputeConfig{FFN: w.Compute, FP8: s.Dispatch == moe.FP8, Costs: hw.NewGEMMCosts(prof)}
	for _, o := range c.Scheds {
		cc.Overlap = o
		if err := cc.Validate(s, mode); err != nil {
			if w.Compute.Zero() {
				var with []string
				for _, n := range workloads.Names() {
					if x, _ := workloads.Get(n); !x.Compute.Zero() {
						with = append(with, n)
					}
				}
				return nil, input(field.Errorf("overlap", "workload %s has no expert FFN (a test shape, not a model); use one of %s", c.Workload, strings.Join(with, ", ")))
			}
			return nil, input(err)
		}
	}
	cc.Overlap = c.Scheds[0]
	return cc, nil
}

// Note is a header's account of the compute, none without schedules.
func (c Compute) Note() []string {
	if len(c.Scheds) == 0 {
		return nil
	}
	w, err := workloads.Get(c.Workload)
	if err != nil || w.Compute.Zero() {
		return nil
	}
	shared := "no shared expert"
	if w.Compute.SharedIntermediate > 0 {
		shared = fmt.Sprintf("a shared expert of %d", w.Compute.SharedIntermediate)
	}
	step := ""
	if c.Layers > 1 {
		step = fmt.Sprintf("; a step of %d such layers", c.Layers)
	}
	var n []string
	for _, o := range c.Scheds {
		n = append(n, o.String())
	}
	return []string{fmt.Sprintf("experts' compute: SwiGLU FFN of intermediate %d and %s, grouped GEMMs in the dispatch dtype on the profile's compute model; overlap %s%s",
		w.Compute.Intermediate, shared, strings.Join(n, ", "), step)}
}

// transportOf is preset p's transport for point c: the knobs its
// mechanism takes (preset.BuildTaking), over the layer's channels.
func (l Layer) transportOf(c Point, p preset.Preset) (transport.Transport, error) {
	layer, reserved := moe.Channels(c.Shape, c.Mode, l.NumSMs, c.Background)
	tr, err := p.BuildTaking(c.Knobs, transport.Needs{Channels: layer, Reserved: reserved})
	if err != nil {
		return nil, input(field.Valuef("preset", p.Name, "%v", err))
	}
	return tr, nil
}

// config is point c's layer on transport tr, without routing.
func (l Layer) config(c Point, tr transport.Transport, prof *profile.Profile) moe.LayerConfig {
	return moe.LayerConfig{Mode: c.Mode, Transport: tr, Profile: prof, NVLink: c.NVLink,
		NumSMs: l.NumSMs, Chunk: l.Chunk, Background: c.Background}
}

// Check builds point c's transport of preset p and checks the layer on it
// without running it (moe.PrecheckWith); a refusal is a *CheckError.
func (l Layer) Check(c Point, prof *profile.Profile, p preset.Preset) (transport.Transport, error) {
	tr, err := l.transportOf(c, p)
	if err != nil {
		return nil, err
	}
	if err := moe.PrecheckWith(c.Shape, l.config(c, tr, prof), moe.Limits{Library: p.Limits, Over: l.Over}); err != nil {
		return nil, &CheckError{Point: c, Preset: p, Err: err}
	}
	return tr, nil
}

// CheckAll checks every point on every preset (Check) before any
// routing is generated or any layer built. A refusal of one point among
// several is a *PointError naming it; a point's profile constants that do
// not apply are the caller's input.
func (l Layer) CheckAll(base *profile.Profile, points []Point, presets []preset.Preset) error {
	for _, c := range points {
		prof, err := WithSets(base, c.Sets)
		if err != nil {
			return input(err)
		}
		for _, p := range presets {
			if _, err := l.Check(c, prof, p); err != nil {
				if len(points) > 1 {
					return &PointError{Point: c, Err: err}
				}
				return err
			}
		}
	}
	return nil
}

// Headroom is what point c on preset p takes of each limit it is under.
func (l Layer) Headroom(c Point, prof *profile.Profile, p preset.Preset) ([]moe.Usage, error) {
	tr, err := l.transportOf(c, p)
	if err != nil {
		return nil, err
	}
	u, err := moe.Headroom(c.Shape, l.config(c, tr, prof), moe.Limits{Library: p.Limits, Over: l.Over})
	if err != nil {
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return u, nil
}

// RunEach checks and runs point c on routing rt and preset p, one result
// under each compute schedule (one without compute), the layer modelled
// once for them all; progress, when not nil, hears of delivered messages.
func (l Layer) RunEach(c Point, rt *moe.Routing, prof *profile.Profile, p preset.Preset, inTurn bool, progress func(int)) ([]*moe.Result, error) {
	tr, err := l.Check(c, prof, p)
	if err != nil {
		return nil, err
	}
	cc, err := l.Compute.Config(c.Shape, c.Mode, prof)
	if err != nil {
		return nil, err
	}
	cfg := l.config(c, tr, prof)
	cfg.Routing, cfg.Log, cfg.NoPayload, cfg.Progress, cfg.InTurn, cfg.Faults = rt, l.Log, l.NoPayload, progress, inTurn, c.Fault.Plan
	var res []*moe.Result
	if cc != nil {
		res, err = moe.RunWithComputes(cfg, *cc, l.Compute.Scheds)
	} else {
		var r *moe.Result
		r, err = moe.RunLayer(cfg)
		res = []*moe.Result{r}
	}
	if err != nil {
		if errors.Is(err, moe.ErrQueueDepth) {
			return nil, input(fmt.Errorf("preset %s: %w", p.Name, err))
		}
		if _, ok := err.(*field.Error); ok {
			return nil, input(err)
		}
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return res, nil
}

// Schedules parses a comma list of compute schedules (moe.ParseOverlap),
// each at most once; with one, a list is refused.
func Schedules(list string, one bool) ([]moe.Overlap, error) {
	names := strings.Split(list, ",")
	if one && len(names) > 1 {
		return nil, input(field.Valuef("overlap", list, "this command takes one schedule"))
	}
	var out []moe.Overlap
	for _, n := range names {
		o, err := moe.ParseOverlap(n)
		if err != nil {
			return nil, input(err)
		}
		if slices.Contains(out, o) {
			return nil, input(field.Errorf("overlap", "%s twice", o))
		}
		out = append(out, o)
	}
	return out, nil
}
