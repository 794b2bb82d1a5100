package sweep

import (
	"errors"
	"strings"

	"fmt"
	"slices"

	"moebench/fault"
	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/transport"
	"moebench/workloads"
)

// Point is one point of a run or sweep, before its transport is chosen.
type Point struct {
	Shape  moe.Shape
	Mode   moe.Mode
	NVLink bool
	// Knobs are the mechanisms' knobs over the presets' own values (a
	// knob not set keeps the preset's); each preset takes those its
	// mechanism declares.
	Knobs          transport.Settings
	Background     moe.Background
	BackgroundName string
	Sets           []string // profile constants, name=value
	GPUs           int      // native engine: GPUs the ranks spread over
	Fault          Fault
}

// Fault is one point's faults.
type Fault struct {
	Plan *fault.Plan // nil when healthy
	Loss string      // the swept loss rate, when swept
	// Point numbers the (configuration, loss rate) pairs, which the seeds
	// then multiply: a point's seeds share it. Seed is the fault seed, and
	// Seeds how many there are (0 when not swept over seeds).
	Point, Seeds int
	Seed         uint64
}

// Background is a background as named and as parsed.
type Background struct {
	Name  string
	Value moe.Background
}

// SetAxis is one profile constant with the values to sweep.
type SetAxis struct {
	Name   string
	Values []string
}

// KnobAxis is one mechanism knob with the values to sweep, as given: an
// integer knob's 0 keeps the preset's value.
type KnobAxis struct {
	Knob   transport.Knob
	Values []string
}

// Grid is what a run or sweep crosses: each list left empty takes the
// shape's own value.
type Grid struct {
	Shape                               moe.Shape // the workload's, its top-k, hidden size and dtypes set
	Ranks, GPUsPerNode, Tokens, Experts []int
	Modes                               []moe.Mode
	NVLink                              *bool // nil: the mode's default (normal mode uses NVLink)
	Chunk                               int   // normal mode's tokens per write, checked against each shape
	Backgrounds                         []Background
	Sets                                []SetAxis
	Knobs                               []KnobAxis // in order: the last varies fastest
}

// Points is the grid's cross product, shapes outermost, then modes,
// backgrounds, the sets' combinations and the knobs; each shape is
// checked as it is made, then each knob's values.
func (g Grid) Points() ([]Point, error) {
	or := func(v []int, def int) []int {
		if len(v) == 0 {
			return []int{def}
		}
		return v
	}
	s0 := g.Shape
	sets := SetCombinations(g.Sets)
	var out []Point
	for _, ranks := range or(g.Ranks, s0.Ranks) {
		for _, per := range or(g.GPUsPerNode, s0.GPUsPerNode) {
			for _, tok := range or(g.Tokens, s0.Tokens) {
				for _, ex := range or(g.Experts, s0.Experts) {
					s := s0
					s.Ranks, s.GPUsPerNode, s.Tokens = ranks, per, tok
					if ex != s0.Experts {
						s.Experts, s.PhysicalExperts = ex, 0
					}
					if err := s.Validate(); err != nil {
						return nil, input(err)
					}
					for _, mode := range g.Modes {
						if err := s.CheckWrites(mode, g.Chunk); err != nil {
							return nil, input(err)
						}
						nv := mode == moe.Normal
						if g.NVLink != nil {
							nv = *g.NVLink
						}
						for _, b := range g.Backgrounds {
							for _, st := range sets {
								out = append(out, Point{Shape: s, Mode: mode, NVLink: nv, Knobs: transport.Settings{},
									Background: b.Value, BackgroundName: b.Name, Sets: st})
							}
						}
					}
				}
			}
		}
	}
	return WithKnobs(out, g.Knobs)
}

// WithKnobs multiplies points out by every knob given values, in order
// (the last varies fastest), each value checked against the knob's
// declaration.
func WithKnobs(points []Point, knobs []KnobAxis) ([]Point, error) {
	for _, ka := range knobs {
		var vals []string
		for _, v := range ka.Values {
			if err := ka.Knob.Check(v); err != nil {
				return nil, input(err)
			}
			if v == "0" && !ka.Knob.IsChoice() {
				v = "" // the preset's own
			}
			vals = append(vals, v)
		}
		if len(vals) == 0 {
			continue
		}
		var next []Point
		for _, p := range points {
			for _, v := range vals {
				p2 := p
				p2.Knobs = p.Knobs.Clone()
				if v != "" {
					p2.Knobs[ka.Knob.Name] = v
				}
				next = append(next, p2)
			}
		}
		points = next
	}
	return points, nil
}

// SetCombinations is every combination of the axes' values, as name=value
// lists, the last axis varying fastest.
func SetCombinations(axes []SetAxis) [][]string {
	sets := [][]string{nil}
	for _, a := range axes {
		var next [][]string
		for _, prev := range sets {
			for _, v := range a.Values {
				next = append(next, append(slices.Clone(prev), a.Name+"="+v))
			}
		}
		sets = next
	}
	return sets
}

// OnProfiles gives each point's shape its profile's NVLink domain
// (moe.Shape.OnProfile), so that estimates, prechecks and reports see the
// domain the run will have; unless nvlinkSet, each point then uses NVLink
// as NVLinkDefault says.
func OnProfiles(base *profile.Profile, points []Point, nvlinkSet bool) error {
	for i := range points {
		c := &points[i]
		prof, err := WithSets(base, c.Sets)
		if err != nil {
			return input(field.Errorf("set", "%v", err))
		}
		s, err := c.Shape.OnProfile(prof)
		if err != nil {
			return input(err)
		}
		c.Shape = s
		if !nvlinkSet {
			c.NVLink = NVLinkDefault(s, c.Mode)
		}
	}
	return nil
}

// NVLinkDefault is whether a layer uses NVLink when not told: normal mode
// always does (DeepEP's kernels need it); LL does where the NVLink domain
// spans hosts, a rack-scale system whose GPUs reach each other over
// NVLink by design (an NVL72), and not within a node, as DeepEP's
// published LL runs are RDMA only.
func NVLinkDefault(s moe.Shape, mode moe.Mode) bool {
	return mode == moe.Normal || s.DomainGPUs() > s.GPUsPerNode
}

// WithSets is base with a point's profile constants applied: base itself
// when there are none, else a copy.
func WithSets(base *profile.Profile, sets []string) (*profile.Profile, error) {
	if len(sets) == 0 {
		return base, nil
	}
	p := base.Clone()
	if err := p.ApplySets(sets); err != nil {
		return nil, err
	}
	return p, nil
}

// Inputs gives each point its routing, generated once per shape, and its
// profile (the base with the point's constants).
type Inputs struct {
	Base    *profile.Profile
	Routing moe.RoutingSpec
	Seed    uint64
	routes  map[moe.Shape]*moe.Routing
}

// Of is point c's routing and profile.
func (in *Inputs) Of(c Point) (*moe.Routing, *profile.Profile, error) {
	if in.routes == nil {
		in.routes = map[moe.Shape]*moe.Routing{}
	}
	rt := in.routes[c.Shape]
	if rt == nil {
		var err error
		if rt, err = moe.Generate(c.Shape, in.Routing, in.Seed); err != nil {
			return nil, nil, input(err)
		}
		in.routes[c.Shape] = rt
	}
	prof, err := WithSets(in.Base, c.Sets)
	if err != nil {
		return nil, nil, input(err)
	}
	return rt, prof, nil
}

// String names a point for a budget's messages.
func (c Point) what(command, preset string) string {
	return fmt.Sprintf("%s of EP%d × %d tokens × top-%d on %s", command, c.Shape.Ranks, c.Shape.Tokens, c.Shape.TopK, preset)
}

// ErrList marks a comma list of values where one value is taken.
var ErrList = errors.New("one value only")

// SetAxes parses profile constants to set, each name=value with a comma
// list of values, into axes, checking every value on a copy of prof so
// that a sweep fails before it runs; with one, a list is refused (a
// field error of ErrList).
func SetAxes(prof *profile.Profile, sets []string, one bool) ([]SetAxis, error) {
	var axes []SetAxis
	for _, s := range sets {
		n, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, input(field.Valuef("set", report.Quote(s), "want name=value"))
		}
		n = strings.TrimSpace(n)
		var vals []string
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				vals = append(vals, x)
			}
		}
		switch {
		case len(vals) == 0:
			return nil, input(field.Valuef("set", report.Quote(s), "no value"))
		case len(vals) > 1 && one:
			return nil, input(field.Valuef("set", report.Quote(s), "%w", ErrList))
		}
		for _, x := range vals {
			if err := prof.Clone().Set(n, x); err != nil {
				return nil, input(field.Valuef("set", report.Quote(s), "%v", err))
			}
		}
		axes = append(axes, SetAxis{n, vals})
	}
	return axes, nil
}

// Workload is the workload name names with its element types set by
// name (DTypes).
func Workload(name, dispatch, combine string) (workloads.Workload, error) {
	w, err := workloads.Get(name)
	if err != nil {
		return w, input(field.Errorf("workload", "%v", err))
	}
	return w, DTypes(&w.Shape, dispatch, combine)
}

// DTypes sets s's dispatch and combine element types by name; "" keeps
// the shape's. The combine path carries no scales: a scaled type would be
// modelled at the size of its bare elements, so it is refused there.
func DTypes(s *moe.Shape, dispatch, combine string) error {
	if dispatch != "" {
		d, err := moe.ParseDType(dispatch)
		if err != nil {
			return input(field.Errorf("dispatch-dtype", "%v", err))
		}
		s.Dispatch = d
	}
	if combine != "" {
		d, err := moe.ParseDType(combine)
		if err != nil {
			return input(field.Errorf("combine-dtype", "%v", err))
		}
		if d == moe.FP8 || d == moe.NVFP4 {
			return input(field.Valuef("combine-dtype", d, "a dispatch type only; combine sends bf16, fp16 or fp32"))
		}
		s.Combine = d
	}
	return nil
}

// Modes parses mode names (moe.ParseMode).
func Modes(names []string) ([]moe.Mode, error) {
	var modes []moe.Mode
	for _, m := range names {
		mode, err := moe.ParseMode(m)
		if err != nil {
			return nil, input(field.Errorf("mode", "%v", err))
		}
		modes = append(modes, mode)
	}
	return modes, nil
}

// Backgrounds parses background specifications (workloads.ParseBackground).
func Backgrounds(specs []string) ([]Background, error) {
	var bgs []Background
	for _, b := range specs {
		v, err := workloads.ParseBackground(b)
		if err != nil {
			return nil, input(field.Errorf("background", "%v", err))
		}
		bgs = append(bgs, Background{b, v})
	}
	return bgs, nil
}
