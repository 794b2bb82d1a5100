package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/traces"
	"moebench/transport/preset"
)

// Replay is a trace with the layer around it resolved from its header and
// the options, ready to run.
type Replay struct {
	opts    Options
	src     traces.Reader
	h       traces.Header
	shape   moe.Shape // Tokens is set per group
	ids     moe.TraceIDs
	nvlink  bool
	limit   moe.GroupLimit // resolved; off when not checked
	ranksBy string         // where the rank count came from, for messages
	limitBy string         // where the limit came from, or why none
}

// New resolves the layer a replay of src runs: the trace's header gives
// the experts, top-k and id space, and the ranks and nodes unless the
// options give them; the workload the rest. Every error is ErrInput.
func New(o Options, src traces.Reader) (*Replay, error) {
	r := &Replay{opts: o, src: src, h: src.Header()}
	h, sp := &r.h, o.spell
	if o.TopK != nil && *o.TopK != h.TopK {
		return nil, &inputErr{field.Valuef("topk", *o.TopK, "%s records top-%d", o.Name, h.TopK)}
	}
	if o.Experts != nil && *o.Experts != h.Experts {
		return nil, &inputErr{field.Valuef("experts", *o.Experts, "%s records %d logical experts", o.Name, h.Experts)}
	}
	s := o.Workload.Shape
	s.Experts, s.PhysicalExperts, s.TopK, s.Tokens = h.Experts, 0, h.TopK, 1
	r.ids = moe.LogicalIDs
	if h.IDSpace == traces.Physical {
		s.PhysicalExperts, r.ids = h.PhysicalExperts, moe.PhysicalIDs
	}
	if o.Hidden != nil {
		s.Hidden = *o.Hidden
	}
	var perBy string
	switch {
	case o.Ranks > 0:
		s.Ranks, r.ranksBy = o.Ranks, sp("ranks")
	case h.EPSize > 0:
		s.Ranks, r.ranksBy = h.EPSize, "the trace's ep_size"
	default:
		r.ranksBy = "the workload's; set " + sp("ranks")
	}
	switch {
	case o.GPUsPerNode > 0:
		s.GPUsPerNode, perBy = o.GPUsPerNode, sp("gpus-per-node")
	case h.GPUsPerNode > 0:
		s.GPUsPerNode, perBy = h.GPUsPerNode, "the trace's gpus_per_node"
	case s.Ranks < s.GPUsPerNode:
		s.GPUsPerNode, perBy = s.Ranks, "one node: fewer ranks than the workload's GPUs per node"
	default:
		perBy = "the workload's; set " + sp("gpus-per-node")
	}
	if s.Physical()%s.Ranks != 0 {
		return nil, inputf("%s: its %d experts cannot be placed evenly on %d ranks (%s)", o.Name, s.Physical(), s.Ranks, r.ranksBy)
	}
	if s.Ranks%s.GPUsPerNode != 0 {
		return nil, inputf("%d ranks (%s) do not fill whole nodes of %d GPUs (%s)", s.Ranks, r.ranksBy, s.GPUsPerNode, perBy)
	}
	if err := s.Validate(); err != nil {
		return nil, inputf("layer shape from %s and the flags: %w", o.Name, err)
	}
	var err error
	if s, err = s.OnProfile(o.Profile); err != nil {
		return nil, inputf("layer shape from %s, the flags and the profile: %w", o.Name, err)
	}
	r.nvlink = o.Mode == moe.Normal || s.DomainGPUs() > s.GPUsPerNode
	if o.NVLink != nil {
		r.nvlink = *o.NVLink
	}
	if err := s.CheckWrites(o.Mode, o.Chunk); err != nil {
		return nil, inputf("layer shape from %s and the flags: %w", o.Name, err)
	}
	r.shape = s
	return r, r.setLimit()
}

// setLimit picks the group limit tokens are checked against: the
// options', else the workload's when the trace has the workload's expert
// count (the same model), else none.
func (r *Replay) setLimit() error {
	w, sp := &r.opts.Workload, r.opts.spell
	var lim moe.GroupLimit
	switch {
	case r.opts.Limit != nil:
		lim, r.limitBy = *r.opts.Limit, sp("topk-groups")
	case w.Groups.On() && r.h.Experts == w.Shape.Experts:
		lim, r.limitBy = w.Groups, "the workload's ("+w.Name+")"
	case w.Groups.On():
		r.limitBy = fmt.Sprintf("not checked: the trace has %d experts, workload %s's limit is for %d (set %s)", r.h.Experts, w.Name, w.Shape.Experts, sp("topk-groups"))
		return nil
	default:
		r.limitBy = "not checked (the workload has none; set " + sp("topk-groups") + ")"
		return nil
	}
	if !lim.On() {
		r.limitBy = "not checked (" + sp("topk-groups") + " 0)"
		return nil
	}
	res, err := lim.Resolve(r.shape)
	if err != nil {
		return inputf("%w (the trace's %d experts, %d nodes)", r.opts.limitErr(err), r.shape.Experts, r.shape.Nodes())
	}
	r.limit = res
	r.limitBy = res.String() + ", " + r.limitBy + "; tokens beyond it are reported, not changed"
	return nil
}

// Header is the trace's header.
func (r *Replay) Header() traces.Header { return r.h }

// Shape is the layer's shape; each group sets Tokens to its busiest
// rank's.
func (r *Replay) Shape() moe.Shape { return r.shape }

// Mode and NVLink are the layer's, as every group runs it.
func (r *Replay) Mode() moe.Mode { return r.opts.Mode }

// NVLink reports whether the layer uses NVLink.
func (r *Replay) NVLink() bool { return r.nvlink }

// Expected is how many groups the replay runs, for a progress bar (0 when
// unknown).
func (r *Replay) Expected() int { return Expected(r.h, r.opts.Steps, r.opts.MaxLayers) }

// Run replays the trace into sink, each group's routing on each preset
// through run; progress, when set, is called after each group.
func (r *Replay) Run(sink Sink, run func(*moe.Routing, preset.Preset) (*moe.Result, error), progress func(g *Group, done int)) error {
	o := &r.opts
	_, err := Run(Config{Name: o.Name, Source: r.src, Shape: r.shape, IDs: r.ids, RanksBy: r.ranksBy,
		Mode: o.Mode, NVLink: r.nvlink, Limit: r.limit, Steps: o.Steps, MaxLayers: o.MaxLayers, MaxOpen: o.MaxOpen,
		Presets: o.Presets, Run: run, Progress: progress}, sink)
	return err
}

// Notes are the header's account of what is replayed: the trace, the
// layer, the group limit, the options' notes and the limits.
func (r *Replay) Notes() []string {
	h, s, o := &r.h, r.shape, &r.opts
	steps, ep := "unknown", "not recorded"
	if h.Steps > 0 {
		steps = strconv.Itoa(h.Steps)
	}
	if h.EPSize > 0 {
		ep = "EP" + strconv.Itoa(h.EPSize)
	}
	ids := fmt.Sprintf("logical ids, %d experts", h.Experts)
	if h.IDSpace == traces.Physical {
		ids = fmt.Sprintf("physical ids, %d physical experts serving %d logical (its physical_to_logical map); the layer moves physical ids as placed", h.PhysicalExperts, h.Experts)
	}
	nv := "off"
	if r.nvlink {
		nv = "on"
	}
	l := []string{fmt.Sprintf("trace %s: %s, top-%d, %d layers, steps %s, ranks %s", o.Name, ids, h.TopK, h.Layers, steps, ep)}
	if h.Provenance != "" {
		l = append(l, "provenance: "+h.Provenance)
	}
	if h.Synthesized {
		l = append(l, "SYNTHESIZED: the trace's tokens were made up to match per-expert counts; its loads are real, its co-selection of experts is not")
	}
	l = append(l,
		fmt.Sprintf("layer: workload %s (hidden %d, %s dispatch, %s combine), EP%d = %s, %s mode, NVLink %s; tokens per rank: the busiest rank's in each (step, layer)",
			o.Workload.Name, s.Hidden, s.Dispatch, s.Combine, s.Ranks, s.Hosts(), o.Mode, nv),
		fmt.Sprintf("source ranks: as recorded; records without a rank are split evenly over the %d ranks", s.Ranks),
		fmt.Sprintf("background %s", o.Background),
		"group limit: "+r.limitBy,
	)
	l = append(l, o.Notes...)
	var lim []string
	if o.Steps > 0 {
		lim = append(lim, fmt.Sprintf("steps below %d", o.Steps))
	}
	if o.MaxLayers > 0 {
		lim = append(lim, fmt.Sprintf("at most %d (step, layer) groups", o.MaxLayers))
	}
	if len(lim) > 0 {
		l = append(l, "limited to "+strings.Join(lim, " and "))
	}
	return l
}

// limitErr names the input behind a group limit's error (a field.Error)
// as the caller does.
func (o *Options) limitErr(err error) error {
	var fe *field.Error
	if errors.As(err, &fe) {
		return errors.New(o.spell(fe.Field) + ": " + fe.Err.Error())
	}
	return err
}
