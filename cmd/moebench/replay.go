package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"moebench/budget"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/replay"
	"moebench/results"
	"moebench/traces"
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
)

const replayExamples = `  moebench trace gen --routing powerlaw:1.2 --ranks 16 --experts 64 --tokens 32 --layers 4 --out skew.bin
  moebench replay --trace skew.bin                          # every (step, layer) on every transport
  moebench replay --trace skew.bin --transport mini-gda --format json --out replay.json
  moebench replay --trace skew.bin --transport mini-gda --fault slow:5:2   # which layers and ranks a slow GPU holds
  moebench replay --trace routing.npz --layout tokens-first --ranks 16 --mode normal
  moebench replay --trace rank0.csv,rank1.csv --from sglang-stat-csv --topk 8 --max-layers 8
`

// defaultMaxOpen is how many (step, layer) groups may wait for their
// ranks' records at once: enough for any model's layers (DeepSeek-V3 has
// 61 MoE layers, Kimi K2 60) when a trace is ordered rank by rank.
const defaultMaxOpen = 256

// replayFlags are replay's knobs: the trace and how to import it, the
// layer around it, and the run options shared with run.
type replayFlags struct {
	traces   []string
	from     string
	layout   string
	imp      traces.ImportOptions
	workload string
	mode     string
	ranks    int
	perNode  int
	hidden   int
	dtype    string
	combine  string
	transportFlags
	knobs knobFlags
	kernelFlags
	background string
	groups     groupFlags
	noPayload  bool
	steps      int
	maxLayers  int
	maxOpen    int
	progress   bool
	prof       profileFlags
	out        outputFlags
	logs       logFlags
	budget     budgetFlags
	faults     faultFlags
	compute    computeFlags
}

func (f *replayFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.traces, "trace", nil, "routing trace `FILE` (bin, jsonl, npy, npz, SGLang CSV or EPLB; several only for sglang-stat-csv, one per rank); required")
	fs.StringVar(&f.from, "from", "", "input format: npy, npz, sglang-stat-csv, eplb, jsonl or bin (default: detect)")
	fs.StringVar(&f.layout, "layout", "", "axis order of 3-D id arrays: layers-first or tokens-first (default: from the array name or the physical map)")
	fs.IntVar(&f.imp.TopK, "topk", 0, "experts per token: required for count inputs; otherwise it must match the trace")
	fs.IntVar(&f.imp.Experts, "experts", 0, "logical experts (0 = the trace's, or inferred from the data on import)")
	fs.IntVar(&f.imp.Tokens, "tokens", 0, "count inputs: rescale each step and layer to this many tokens (0 = keep integral counts)")
	fs.Uint64Var(&f.imp.Seed, "seed", 1, "seed for tokens synthesized from counts")
	fs.StringVar(&f.workload, "workload", "deepseek-v3", "hidden size and dtypes from this preset: "+strings.Join(workloads.Names(), ", "))
	fs.StringVar(&f.mode, "mode", "ll", "DeepEP mode: ll (low latency) or normal (high throughput)")
	fs.IntVar(&f.ranks, "ranks", 0, "expert-parallel ranks (default the trace's ep_size, else the workload's); records without a rank are split evenly over them")
	fs.IntVar(&f.perNode, "gpus-per-node", 0, "GPUs per node (default the trace's, else the workload's)")
	fs.IntVar(&f.hidden, "hidden", 0, "hidden size (default the workload's)")
	registerDTypes(fs, &f.dtype, &f.combine)
	f.transportFlags.register(fs)
	f.knobs.register(fs, false)
	f.kernelFlags.register(fs, false)
	fs.StringVar(&f.background, "background", "none", backgroundHelp)
	f.groups.register(fs, "group-limited gating to check the trace's tokens against (reported, not enforced; the workload's applies when the trace has its expert count)")
	fs.BoolVar(&f.noPayload, "no-payload-check", false, "skip the payload checksums (placement and exactly-once are always checked)")
	fs.IntVar(&f.steps, "steps", 0, "replay only steps 0..N-1 (0 = every step)")
	fs.IntVar(&f.maxLayers, "max-layers", 0, "stop after N (step, layer) groups (0 = all)")
	fs.IntVar(&f.maxOpen, "max-open", defaultMaxOpen, "(step, layer) groups that may wait for their ranks' records at once")
	fs.BoolVar(&f.progress, "progress", false, "draw the progress bar even when stderr is not a terminal")
	f.prof.register(fs)
	f.out.register(fs)
	f.logs.register(fs)
	f.budget.registerInTurn(fs)
	f.faults.register(fs, false)
	f.compute.registerOverlap(fs)
}

// runReplay implements "moebench replay": every (step, layer) of a routing
// trace through the layer on each transport, streamed.
func runReplay(args []string, stdout, stderr io.Writer) error {
	return replayCommand(args, stdout, stderr, nil)
}

// replayCommand is runReplay with a hook called after each replayed group
// (tests watch memory through it).
func replayCommand(args []string, stdout, stderr io.Writer, hook func(done int)) error {
	fs := newFlags("replay", "replay --trace FILE [flags]", replayExamples, stdout)
	var f replayFlags
	f.register(fs)
	plotPath := fs.String("plot", "", "also draw per-layer time over the replay and per-rank load to `FILE` (.svg or .png)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: replay takes no arguments (got %s); name the trace with --trace", errUsage, quoteArgs(fs.Args()))
	}
	if len(splitList(f.traces)) == 0 {
		return fmt.Errorf("%w: replay: --trace FILE is required", errUsage)
	}
	if err := f.out.check(); err != nil {
		return err
	}
	if err := f.budget.check(); err != nil {
		return err
	}
	if err := f.faults.check(fs); err != nil {
		return err
	}
	f.imp.MaxBytes = f.budget.limit.Bytes
	if err := checkPlotPath("--plot", *plotPath); err != nil {
		return err
	}
	if err := checkFiles(f.out.outputs(fileArg{"--plot", *plotPath}), append(listArgs("--trace", f.traces...), profileArgs("--profile", f.prof.spec)...)); err != nil {
		return err
	}
	log, err := f.logs.logger(stderr)
	if err != nil {
		return err
	}
	defer log.Sync()
	rp, err := newReplayer(&f, fs)
	if err != nil {
		return err
	}
	rp.lf.log, rp.lf.budget, rp.lf.faults, rp.stderr = log, f.budget, f.faults, stderr
	budget.SoftLimit(f.budget.limit)
	src, err := f.open()
	if err != nil {
		return err
	}
	defer src.Close()
	if err := rp.setTrace(&f, fs, src); err != nil {
		return err
	}
	if err := rp.setFaults(); err != nil {
		return err
	}
	if err := rp.precheck(f.prof.sets); err != nil {
		return err
	}
	bar := report.NewProgress(stderr, "moebench replay", replay.Expected(rp.h, rp.steps, rp.maxLayers), report.ProgressOptions{Force: f.progress})
	progress := func(g *replay.Group, done int) {
		bar.Step(fmt.Sprintf("step %d layer %d", g.Step, g.Layer))
		if hook != nil {
			hook(done)
		}
	}
	// A replay error is the trace's or the model's, not the output file's:
	// return it as it is, without the atomic writer's "writing FILE".
	var rerr error
	var pl *results.ReplayPlot
	f.out.hold() // the result and the plot, both or neither
	defer f.out.discard()
	err = f.out.emit(stdout, func(w io.Writer) error {
		var sink replay.Sink
		if sink, pl, rerr = replaySink(w, f.out.format, rp, *plotPath); rerr != nil {
			return rerr
		}
		rerr = rp.run(sink, progress)
		if rerr == nil && pl != nil {
			// Checked before the output is committed: a figure with
			// nothing to draw leaves no file.
			rerr = checkFigure(*plotPath, &pl.Doc, "no layer has a time to draw")
		}
		return rerr
	})
	bar.Done()
	if rerr != nil {
		return rerr
	}
	if err == nil && pl != nil {
		err = f.out.writePlot(*plotPath, &pl.Doc)
	}
	if err != nil {
		return err
	}
	return f.out.commit()
}

// open reads the trace through the importer, which streams native traces
// and reads NumPy and count inputs as trace convert does.
func (f *replayFlags) open() (traces.ReadCloser, error) {
	opt := f.imp
	if f.from != "" {
		fm, err := parseFormat("from", f.from, traces.FormatNPY, traces.FormatNPZ, traces.FormatSGLangStatCSV, traces.FormatEPLB, traces.FormatJSONL, traces.FormatBinary)
		if err != nil {
			return nil, err
		}
		opt.From = fm
	}
	switch traces.Layout(f.layout) {
	case traces.LayoutAuto, traces.LayersFirst, traces.TokensFirst:
		opt.Layout = traces.Layout(f.layout)
	default:
		return nil, fmt.Errorf("%w: --layout %s is not layers-first or tokens-first", errUsage, report.Quote(f.layout))
	}
	// The header keeps what the data says; --ranks and --gpus-per-node
	// shape the layer, not the trace.
	opt.EPSize, opt.GPUsPerNode, opt.Provenance = 0, 0, ""
	src, err := traces.Import(splitList(f.traces), opt)
	if errors.Is(err, traces.ErrOption) {
		return nil, fmt.Errorf("%w: --trace: %w", errUsage, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return src, nil
}

// replayer is what replay resolves from the flags and the trace's header
// before handing the trace to the replay package.
type replayer struct {
	name    string // the trace, for messages
	src     traces.Reader
	h       traces.Header
	ids     moe.TraceIDs
	base    moe.Shape // Tokens is set per group
	ranksBy string    // where the rank count came from, for messages
	perBy   string
	mode    moe.Mode
	nvlink  bool
	bg      moe.Background
	bgName  string
	knobs   transport.Settings // the mechanisms' knobs, one value each
	presets []preset.Preset
	prof    *profile.Profile
	lf      layerFlags // the run options runOne reads
	wl      string
	limit   moe.GroupLimit // resolved; off when not checked
	limitBy string         // where the limit came from, or why none
	// fault is every layer's faults (lf.faults parsed for the trace's
	// ranks); stderr hears of each layer that fails under them.
	fault  faultPoint
	stderr io.Writer

	steps, maxLayers, maxOpen int
}

// setFaults parses --fault for the trace's layer: a rank past its ranks
// is the command line's.
func (rp *replayer) setFaults() error {
	c, err := rp.lf.faults.expand([]config{{shape: rp.base}})
	if err != nil {
		return err
	}
	rp.fault = c[0].fault
	return nil
}

// newReplayer resolves everything that does not need the trace: the mode,
// the background, the presets, the profile, the run options.
func newReplayer(f *replayFlags, fs *pflag.FlagSet) (*replayer, error) {
	rp := &replayer{wl: f.workload}
	var err error
	if rp.mode, err = moe.ParseMode(f.mode); err != nil {
		return nil, fmt.Errorf("%w: --mode: %v", errUsage, err)
	}
	rp.nvlink = f.nvlink
	if !fs.Changed("nvlink") {
		rp.nvlink = rp.mode == moe.Normal
	}
	if rp.bg, err = workloads.ParseBackground(f.background); err != nil {
		return nil, fmt.Errorf("%w: --background: %v", errUsage, err)
	}
	rp.bgName = f.background
	if fs.Changed("chunk") && rp.mode != moe.Normal {
		return nil, fmt.Errorf("%w: --chunk: only normal mode writes in chunks (add --mode normal)", errUsage)
	}
	for _, c := range []struct {
		name string
		v    int
		what string
	}{
		{"num-sms", f.numSMs, "0 (DeepEP's choice) or more"},
		{"chunk", f.chunk, "0 (16 tokens) or more"}, {"steps", f.steps, "0 (every step) or more"},
		{"max-layers", f.maxLayers, "0 (all) or more"}, {"ranks", f.ranks, "0 (the trace's) or more"},
		{"gpus-per-node", f.perNode, "0 (the trace's) or more"}, {"hidden", f.hidden, "0 (the workload's) or more"},
		{"topk", f.imp.TopK, "0 (the trace's) or more"}, {"experts", f.imp.Experts, "0 (the trace's) or more"},
		{"tokens", f.imp.Tokens, "0 or more"},
	} {
		if c.v < 0 {
			return nil, fmt.Errorf("%w: --%s %d: must be %s", errUsage, c.name, c.v, c.what)
		}
	}
	if f.maxOpen < 1 {
		return nil, fmt.Errorf("%w: --max-open %d: must be at least 1", errUsage, f.maxOpen)
	}
	rp.steps, rp.maxLayers, rp.maxOpen = f.steps, f.maxLayers, f.maxOpen
	rp.lf = layerFlags{kernelFlags: kernelFlags{numSMs: f.numSMs, chunk: f.chunk}, noPayload: f.noPayload}
	if err := f.compute.check(fs); err != nil {
		return nil, err
	}
	rp.lf.compute, rp.lf.workload = f.compute, f.workload
	if rp.prof, err = f.prof.load(); err != nil {
		return nil, err
	}
	if rp.presets, err = resolvePresets(f.transports, f.presets, fs.Changed("preset"), rp.prof); err != nil {
		return nil, err
	}
	for _, n := range f.knobs.names() {
		if v := fs.Lookup(n); v.Changed && strings.Contains(v.Value.String(), ",") {
			return nil, fmt.Errorf("%w: --%s: replay takes one value", errUsage, n)
		}
	}
	if err := f.knobs.checkApplies(rp.presets); err != nil {
		return nil, err
	}
	one, err := f.knobs.expand([]config{{knobs: transport.Settings{}}})
	if err != nil {
		return nil, err
	}
	rp.knobs = one[0].knobs
	return rp, nil
}

// setTrace builds the layer shape from the trace's header and the flags.
func (rp *replayer) setTrace(f *replayFlags, fs *pflag.FlagSet, src traces.Reader) error {
	rp.src, rp.h, rp.name = src, src.Header(), strings.Join(splitList(f.traces), ",")
	h := &rp.h
	if fs.Changed("topk") && f.imp.TopK != h.TopK {
		return fmt.Errorf("%w: --topk %d: %s records top-%d", errUsage, f.imp.TopK, rp.name, h.TopK)
	}
	if fs.Changed("experts") && f.imp.Experts != h.Experts {
		return fmt.Errorf("%w: --experts %d: %s records %d logical experts", errUsage, f.imp.Experts, rp.name, h.Experts)
	}
	w, err := workloads.Get(f.workload)
	if err != nil {
		return fmt.Errorf("%w: --workload: %v", errUsage, err)
	}
	s := w.Shape
	s.Experts, s.PhysicalExperts, s.TopK, s.Tokens = h.Experts, 0, h.TopK, 1
	rp.ids = moe.LogicalIDs
	if h.IDSpace == traces.Physical {
		s.PhysicalExperts, rp.ids = h.PhysicalExperts, moe.PhysicalIDs
	}
	if fs.Changed("hidden") {
		s.Hidden = f.hidden
	}
	if err := applyDTypes(&s, f.dtype, f.combine); err != nil {
		return err
	}
	switch {
	case f.ranks > 0:
		s.Ranks, rp.ranksBy = f.ranks, "--ranks"
	case h.EPSize > 0:
		s.Ranks, rp.ranksBy = h.EPSize, "the trace's ep_size"
	default:
		rp.ranksBy = "the workload's; set --ranks"
	}
	switch {
	case f.perNode > 0:
		s.GPUsPerNode, rp.perBy = f.perNode, "--gpus-per-node"
	case h.GPUsPerNode > 0:
		s.GPUsPerNode, rp.perBy = h.GPUsPerNode, "the trace's gpus_per_node"
	case s.Ranks < s.GPUsPerNode:
		s.GPUsPerNode, rp.perBy = s.Ranks, "one node: fewer ranks than the workload's GPUs per node"
	default:
		rp.perBy = "the workload's; set --gpus-per-node"
	}
	if s.Physical()%s.Ranks != 0 {
		return fmt.Errorf("%w: %s: its %d experts cannot be placed evenly on %d ranks (%s)", errUsage, rp.name, s.Physical(), s.Ranks, rp.ranksBy)
	}
	if s.Ranks%s.GPUsPerNode != 0 {
		return fmt.Errorf("%w: %d ranks (%s) do not fill whole nodes of %d GPUs (%s)", errUsage, s.Ranks, rp.ranksBy, s.GPUsPerNode, rp.perBy)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%w: layer shape from %s and the flags: %w", errUsage, rp.name, err)
	}
	if s, err = s.OnProfile(rp.prof); err != nil {
		return fmt.Errorf("%w: layer shape from %s, the flags and the profile: %w", errUsage, rp.name, err)
	}
	if !fs.Changed("nvlink") {
		rp.nvlink = nvlinkDefault(s, rp.mode)
	}
	if err := s.CheckWrites(rp.mode, f.chunk); err != nil {
		return fmt.Errorf("%w: layer shape from %s and the flags: %w", errUsage, rp.name, err)
	}
	rp.base = s
	if err := rp.setLimit(f, fs, w); err != nil {
		return err
	}
	return nil
}

// run replays the trace into sink; progress is called after each group.
func (rp *replayer) run(sink replay.Sink, progress func(g *replay.Group, done int)) error {
	_, err := replay.Run(replay.Config{Name: rp.name, Source: rp.src, Shape: rp.base, IDs: rp.ids, RanksBy: rp.ranksBy,
		Mode: rp.mode, NVLink: rp.nvlink, Limit: rp.limit, Steps: rp.steps, MaxLayers: rp.maxLayers, MaxOpen: rp.maxOpen,
		Presets: rp.presets, Run: rp.runOne, Progress: progress}, sink)
	var ge *replay.GroupError
	switch {
	case errors.Is(err, replay.ErrInput):
		return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), replay.ErrInput.Error()+": "))
	case errors.As(err, &ge) && errors.Is(ge.Err, errUsage):
		return fmt.Errorf("%w: %s: step %d, layer %d: %s", errUsage, ge.Trace, ge.Step, ge.Layer, message(ge.Err))
	case errors.As(err, &ge):
		return fmt.Errorf("%s: step %d, layer %d: %w", ge.Trace, ge.Step, ge.Layer, ge.Err)
	}
	return err
}

// runOne models one group's routing on preset p as run does; a layer
// whose queues cannot hold what LL mode keeps in flight names the trace's
// way out.
//
// Groups run one at a time, each checked against --max-memory before it
// starts (its busiest rank sets its size): an LL group that fits only
// with dispatch and combine in turn runs them in turn, as run does.
func (rp *replayer) runOne(rt *moe.Routing, p preset.Preset) (*moe.Result, error) {
	c := config{shape: rt.Shape, mode: rp.mode, nvlink: rp.nvlink, knobs: rp.knobs, bg: rp.bg, bgName: rp.bgName, fault: rp.fault}
	cost := layerCost(c, p.Mechanism, rp.lf.numSMs)
	what := fmt.Sprintf("EP%d × %d tokens × top-%d on %s", c.shape.Ranks, c.shape.Tokens, c.shape.TopK, p.Name)
	inTurn, _, err := rp.lf.budget.limit.Place(rp.lf.log, what, c.mode, cost)
	if err != nil {
		return nil, rp.lf.budget.usage(err)
	}
	res, err := runOne(&rp.lf, c, rt, rp.prof, p, inTurn, nil)
	if err == nil && rp.stderr != nil {
		for _, ph := range phases(res) {
			if fl := ph.p.Failure; fl != nil {
				fmt.Fprintf(rp.stderr, "moebench replay: preset %s: a layer of %d tokens on the busiest rank failed under its faults (%s): %s: %v\n",
					p.Name, rt.Shape.Tokens, res.Faults, ph.name, fl)
			}
		}
	}
	// The tokens come from the trace, not a flag: say what else helps.
	if de := (*moe.DepthError)(nil); errors.As(err, &de) {
		return nil, fmt.Errorf("%w: %d tokens on the busiest rank: preset %s: %v; replay with --mode normal or on more --ranks", errUsage, rt.Shape.Tokens, p.Name, de)
	}
	return res, err
}

// notes are the header's account of what was replayed.
func (rp *replayer) notes() []string {
	h, s := &rp.h, rp.base
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
	if rp.nvlink {
		nv = "on"
	}
	l := []string{
		fmt.Sprintf("trace %s: %s, top-%d, %d layers, steps %s, ranks %s", rp.name, ids, h.TopK, h.Layers, steps, ep),
	}
	if h.Provenance != "" {
		l = append(l, "provenance: "+h.Provenance)
	}
	if h.Synthesized {
		l = append(l, "SYNTHESIZED: the trace's tokens were made up to match per-expert counts; its loads are real, its co-selection of experts is not")
	}
	l = append(l,
		fmt.Sprintf("layer: workload %s (hidden %d, %s dispatch, %s combine), EP%d = %s, %s mode, NVLink %s; tokens per rank: the busiest rank's in each (step, layer)",
			rp.wl, s.Hidden, s.Dispatch, s.Combine, s.Ranks, nodesOf(s), rp.mode, nv),
		fmt.Sprintf("source ranks: as recorded; records without a rank are split evenly over the %d ranks", s.Ranks),
		fmt.Sprintf("background %s", rp.bg),
		"group limit: "+rp.limitBy,
	)
	l = append(l, rp.lf.faults.note()...)
	var lim []string
	if rp.steps > 0 {
		lim = append(lim, fmt.Sprintf("steps below %d", rp.steps))
	}
	if rp.maxLayers > 0 {
		lim = append(lim, fmt.Sprintf("at most %d (step, layer) groups", rp.maxLayers))
	}
	if len(lim) > 0 {
		l = append(l, "limited to "+strings.Join(lim, " and "))
	}
	return l
}

// header is the report header every format carries.
func (rp *replayer) header() report.Header {
	h := header("replay", rp.prof, "modelled (discrete-event simulation of the transports on the profile's hardware model, routing replayed from a trace)")
	h.Extra = rp.notes()
	return h
}

// setLimit picks the group limit replay checks tokens against: the flags',
// else the workload's when the trace has the workload's expert count (the
// same model), else none.
func (rp *replayer) setLimit(f *replayFlags, fs *pflag.FlagSet, w workloads.Workload) error {
	explicit := fs.Changed("topk-groups") || fs.Changed("expert-groups")
	lim := moe.GroupLimit{}
	switch {
	case explicit:
		var err error
		if lim, err = f.groups.limit(fs, w); err != nil {
			return err
		}
		rp.limitBy = "--topk-groups"
	case w.Groups.On() && rp.h.Experts == w.Shape.Experts:
		lim, rp.limitBy = w.Groups, "the workload's ("+w.Name+")"
	case w.Groups.On():
		rp.limitBy = fmt.Sprintf("not checked: the trace has %d experts, workload %s's limit is for %d (set --topk-groups)", rp.h.Experts, w.Name, w.Shape.Experts)
		return nil
	default:
		rp.limitBy = "not checked (the workload has none; set --topk-groups)"
		return nil
	}
	if !lim.On() {
		rp.limitBy = "not checked (--topk-groups 0)"
		return nil
	}
	res, err := lim.Resolve(rp.base)
	if err != nil {
		return fmt.Errorf("%w: %v (the trace's %d experts, %d nodes)", errUsage, limitErr(err), rp.base.Experts, rp.base.Nodes())
	}
	rp.limit = res
	rp.limitBy = res.String() + ", " + rp.limitBy + "; tokens beyond it are reported, not changed"
	return nil
}
