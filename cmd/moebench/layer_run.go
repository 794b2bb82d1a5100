package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/field"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/routing"
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
)

const runExamples = `  moebench run                                     # deepseek-v3, LL, 128 tokens, EP16 (2 × 8 GPUs), every transport
  moebench run --ranks 8 --gpus-per-node 4 --experts 288 --preset deepep-v1
  moebench run --transport mini-gda --background bulk:64:shared
  moebench run --mode normal --nvlink --format json --out run.json
  moebench run --mode normal --tokens 4096 --ranks 32 --profile p-roce   # across nodes: one RDMA copy per (token, node)
  moebench run --topk-groups 0                      # deepseek-v3 without its 4-of-8 group-limited gating
  moebench run --routing powerlaw:1.2 --seed 7 --format csv
  moebench run --transport mini-gda,mini-proxy --fault loss:1e-4 --fault slow:3:2   # under faults, seeded (--fault-seed)
  moebench run --engine native --virtual-ranks 8 --transport mini-gda,mini-proxy,dc,direct   # on this host's GPU
  moebench run --engine native --virtual-ranks 8 --mode normal --tokens 4096 --transport direct
  moebench run --engine native --gpus 2 --transport direct,mini-gda,nccl-a2a   # NCCL's all-to-all beside, same bytes
`

func runRun(args []string, stdout, stderr io.Writer) error {
	return layerCommand("run", args, stdout, stderr)
}

// layerFlags are the knobs of run and sweep; sweep accepts lists for
// every numeric knob, run only for --transport and --preset.
type layerFlags struct {
	shapeFlags
	dtype     string
	combine   string
	routing   string
	groups    groupFlags
	limitNote string // the group limit in force, for the header
	transportFlags
	knobs knobFlags
	kernelFlags
	backgrounds []string
	seed        uint64
	noPayload   bool
	progress    bool
	prof        profileFlags
	out         outputFlags
	logs        logFlags
	native      nativeFlags
	budget      budgetFlags
	limits      limitFlags // --over-limit
	log         *zap.Logger
	ext         layerExtras  // --plot, and sweep's --shard
	faults      faultFlags   // --fault, --fault-seed, and sweep's --seeds and --loss
	compute     computeFlags // --overlap, --layers
}

func (f *layerFlags) register(fs *pflag.FlagSet) {
	f.shapeFlags.register(fs, true)
	registerDTypes(fs, &f.dtype, &f.combine)
	fs.StringVar(&f.routing, "routing", "uniform", "synthetic routing (one value): "+routing.Syntax)
	f.groups.register(fs, "group-limited gating of the synthetic routing")
	f.transportFlags.register(fs)
	f.knobs.register(fs, false)
	f.kernelFlags.register(fs, true)
	fs.StringSliceVar(&f.backgrounds, "background", []string{"none"}, backgroundHelp)
	fs.Uint64Var(&f.seed, "seed", 1, "routing seed")
	fs.BoolVar(&f.noPayload, "no-payload-check", false, "skip the payload checksums (placement and exactly-once are always checked)")
	fs.BoolVar(&f.progress, "progress", false, "draw the progress bar even when stderr is not a terminal")
	f.prof.register(fs)
	f.prof.registerTopology(fs)
	f.out.register(fs)
	f.logs.register(fs)
	f.budget.registerInTurn(fs)
	f.native.register(fs)
	f.compute.register(fs)
}

// setAxis is one --set constant with the values to sweep.
type setAxis struct {
	name   string
	values []string
}

// config is one point of a run or sweep, before the transport is chosen.
type config struct {
	shape  moe.Shape
	mode   moe.Mode
	nvlink bool
	// knobs are the mechanisms' knobs over the presets' own values (a
	// knob not set keeps the preset's); each preset takes those its
	// mechanism declares.
	knobs  transport.Settings
	bg     moe.Background
	bgName string
	sets   []string // name=value
	gpus   int      // native engine: GPUs the ranks spread over
	fault  faultPoint
}

// item is one simulated run ready to render.
type item struct {
	cfg    config
	preset preset.Preset
	res    *moe.Result
	knobs  []knob
	limits []moe.Usage   // headroom against each limit the point is under
	layers int           // MoE layers a step, with compute
	more   []*moe.Result // the same point under the further --overlap schedules
}

type knob struct{ name, value string }

// sweepOnly are the flags sweep takes as lists and run as one value,
// besides the mechanisms' knobs.
var sweepOnly = []string{"mode", "tokens", "ranks", "gpus-per-node", "experts", "background", "gpus", "virtual-ranks"}

func layerCommand(name string, args []string, stdout, stderr io.Writer) error {
	sweep := name == "sweep"
	f, fs, err := parseLayerFlags(name, args, stdout)
	if err != nil {
		return err
	}
	log, err := f.logs.logger(stderr)
	if err != nil {
		return err
	}
	f.log = log
	defer log.Sync()
	if err := f.checkFlags(fs, name, sweep); err != nil {
		return err
	}
	base, axes, err := f.loadProfile(sweep)
	if err != nil {
		return err
	}
	configs, err := f.expand(fs, axes)
	if err != nil {
		return err
	}
	if err := onProfiles(base, configs, fs.Changed("nvlink")); err != nil {
		return err
	}
	if configs, err = f.faults.expand(configs); err != nil {
		return err
	}
	spec, err := moe.ParseRoutingSpec(f.routing)
	if err != nil {
		return fmt.Errorf("%w: --routing: %v", errUsage, err)
	}
	native, err := f.checkEngine(fs)
	if err != nil {
		return err
	}
	if native {
		return runNativeLayer(name, f, fs, base, axes, configs, spec, stdout, stderr)
	}
	presets, err := resolvePresets(f.transports, f.presets, fs.Changed("preset"), base)
	if err != nil {
		return err
	}
	if err := f.knobs.checkApplies(presets); err != nil {
		return err
	}
	budget.SoftLimit(f.budget.limit)
	// The model's synthetic routing; the native engine keeps its own.
	if spec.Limit, err = f.groupLimit(fs, configs); err != nil {
		return err
	}
	plan, err := f.placePoints(name, configs, presets)
	if err != nil {
		return err
	}
	// What makes a point impossible, and a --set nothing reads, refuse
	// the command before any layer is built.
	if err := f.precheck(name, base, configs, presets); err != nil {
		return err
	}
	items, err := f.runPoints(name, fs, axes, base, configs, presets, spec, plan, stderr)
	if err != nil {
		return err
	}
	h := header(name, base, "modelled (discrete-event simulation of the transports on the profile's hardware model)")
	h.Seed = &f.seed
	f.limitNote = describeLimit(spec.Limit, fs)
	h.Extra = describe(f, configs, spec)
	if n := topologyNote(base, configs[0].sets); n != "" {
		h.Extra = append(h.Extra, n)
	}
	if n := launchNote(base, configs, f.numSMs); n != "" {
		h.Extra = append(h.Extra, n)
	}
	h.Extra = append(h.Extra, f.faults.note()...)
	h.Extra = append(h.Extra, f.compute.note(f.workload)...)
	h.Extra = append(h.Extra, overNotes(items)...)
	if err := f.ext.emit(&f.out, stdout, h, f.workload, items, len(configs)*len(presets)); err != nil {
		return err
	}
	if f.faults.seeds == 0 {
		warnFailed(stderr, name, items)
	}
	return nil
}

// parseLayerFlags registers run's or sweep's flags and parses args.
func parseLayerFlags(name string, args []string, stdout io.Writer) (*layerFlags, *pflag.FlagSet, error) {
	sweep := name == "sweep"
	usage, examples := "run [flags]", runExamples
	if sweep {
		usage, examples = "sweep [flags]", sweepExamples
	}
	fs := newFlags(name, usage, examples, stdout)
	f := &layerFlags{}
	f.register(fs)
	f.limits.register(fs)
	f.ext.register(fs, sweep)
	f.faults.register(fs, sweep)
	if !sweep {
		// The knobs are lists for sweep; run's help says it takes one.
		for _, fl := range append(slices.Clone(sweepOnly), f.knobs.names()...) {
			if v := fs.Lookup(fl); v != nil {
				v.Usage += " (one value; sweep takes a list)"
			}
		}
	}
	if err := parse(fs, args); err != nil {
		return nil, nil, err
	}
	return f, fs, nil
}

// checkFlags refuses what the flags say on their own: arguments, outputs,
// files, the budget, limits, faults, and lists where run takes one value.
func (f *layerFlags) checkFlags(fs *pflag.FlagSet, name string, sweep bool) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s takes no arguments (got %s)", errUsage, name, report.QuoteArgs(fs.Args()))
	}
	if err := f.out.check(); err != nil {
		return err
	}
	if err := f.ext.check(fs, f.out.format); err != nil {
		return err
	}
	if err := f.faults.check(fs); err != nil {
		return err
	}
	if err := checkFiles(f.out.outputs(outfile.Arg{Name: "--plot", Path: f.ext.plot}), append(profileArgs("--profile", f.prof.spec),
		outfile.Arg{Name: "--lib", Path: f.native.lib}, outfile.Arg{Name: "--nccl-lib", Path: f.native.ncclLib})); err != nil {
		return err
	}
	if err := f.budget.check(); err != nil {
		return err
	}
	if err := f.limits.check(fs); err != nil {
		return err
	}
	if !sweep {
		for _, fl := range append(slices.Clone(sweepOnly), f.knobs.names()...) {
			if v := fs.Lookup(fl); v != nil && v.Changed && strings.Contains(v.Value.String(), ",") {
				return fmt.Errorf("%w: --%s: run takes one value; moebench sweep takes lists", errUsage, fl)
			}
		}
	}
	return nil
}

// checkEngine refuses the flags the chosen engine does not take and says
// whether it is the native one.
func (f *layerFlags) checkEngine(fs *pflag.FlagSet) (native bool, err error) {
	if f.native.engine == "native" && (fs.Changed("topk-groups") || fs.Changed("expert-groups")) {
		return false, fmt.Errorf("%w: --topk-groups: group-limited routing is the model's; the native engine routes without a limit", errUsage)
	}
	switch f.native.engine {
	case "native":
		for _, fl := range []string{"plot", "shard", "topology", "fault", "fault-seed", "seeds", "loss", overLimitFlag} {
			if fs.Changed(fl) {
				return false, fmt.Errorf("%w: --%s: only with --engine model (a native run is measured on one host)", errUsage, fl)
			}
		}
		return true, nil
	case "model":
		for _, fl := range []string{"gpus", "virtual-ranks", "nic-sms", "bg-sms", "warmup", "reps", "flush-l2", "verify", "nic-pace", "lib", "nccl-lib", "timeout"} {
			if fs.Changed(fl) {
				return false, fmt.Errorf("%w: --%s: only with --engine native", errUsage, fl)
			}
		}
		if slices.Contains(splitList(f.transports), "direct") {
			return false, fmt.Errorf("%w: --transport direct is the native engine's direct-store path; in the model, same-node peers use NVLink with --nvlink", errUsage)
		}
		if slices.Contains(splitList(f.transports), "nccl-a2a") {
			return false, fmt.Errorf("%w: --transport nccl-a2a is the native engine's NCCL baseline (--engine native --gpus N)", errUsage)
		}
		return false, nil
	}
	return false, fmt.Errorf("%w: --engine %s: want model or native", errUsage, report.Quote(f.native.engine))
}

// pointPlan is what the budget decided of each point, in serial order
// (configuration-major): its estimated messages (the progress bar's
// units), whether it runs dispatch and combine in turn, and the estimate
// it runs under.
type pointPlan struct {
	msgs   []int
	inTurn []bool
	weight []int64
	total  int
}

// placePoints refuses, before generating anything, a point the machine
// cannot hold, and places this shard's points in the memory budget:
// points run concurrently over the cores, as many at once as their
// estimates fit.
func (f *layerFlags) placePoints(name string, configs []config, presets []preset.Preset) (pointPlan, error) {
	var pts []budget.Point
	var idx []int // each point's index in the serial order
	for ci, c := range configs {
		for pi, p := range presets {
			if i := ci*len(presets) + pi; f.ext.shard.Has(i) {
				what := fmt.Sprintf("%s of EP%d × %d tokens × top-%d on %s", name, c.shape.Ranks, c.shape.Tokens, c.shape.TopK, p.Name)
				pts = append(pts, budget.Point{What: what, Mode: c.mode, Cost: layerCost(c, p.Mechanism, f.numSMs)})
				idx = append(idx, i)
			}
		}
	}
	if err := f.budget.limit.PlacePoints(f.log, pts, int64(min(runtime.GOMAXPROCS(0), len(pts)))); err != nil {
		return pointPlan{}, f.budget.usage(err)
	}
	n := len(configs) * len(presets)
	pl := pointPlan{msgs: make([]int, n), inTurn: make([]bool, n), weight: make([]int64, n)}
	for k, p := range pts {
		i := idx[k]
		pl.inTurn[i], pl.weight[i], pl.msgs[i] = p.InTurn, p.Weight, int(min(p.Cost.Messages, 1<<40))
		pl.total += pl.msgs[i]
	}
	return pl, nil
}

// runPoints runs this shard's points concurrently over the cores, each
// once the memory gate admits its estimate, with a progress bar moved by
// delivered messages; the items keep the serial order.
func (f *layerFlags) runPoints(name string, fs *pflag.FlagSet, axes []setAxis, base *profile.Profile, configs []config,
	presets []preset.Preset, spec moe.RoutingSpec, pl pointPlan, stderr io.Writer) ([]item, error) {
	bar := report.NewProgress(stderr, "moebench "+name, pl.total, report.ProgressOptions{Force: f.progress})
	routes := map[moe.Shape]*moe.Routing{}
	type job struct {
		cfg    config
		rt     *moe.Routing
		prof   *profile.Profile
		p      preset.Preset
		inTurn bool
		weight int64 // the estimate it runs under
	}
	var jobs []job
	var left []int // per job, the messages its estimate has left for the bar
	for ci, c := range configs {
		rt, prof, err := configInputs(c, routes, spec, f.seed, base)
		if err != nil {
			return nil, err
		}
		for pi, p := range presets {
			if i := ci*len(presets) + pi; f.ext.take(i) {
				jobs = append(jobs, job{c, rt, prof, p, pl.inTurn[i], pl.weight[i]})
				left = append(left, pl.msgs[i])
			}
		}
	}
	// The bar moves with delivered messages, from every running point
	// (and, in LL, from dispatch and combine at once).
	var barMu sync.Mutex
	advance := func(i, n int) {
		barMu.Lock()
		defer barMu.Unlock()
		n = min(n, left[i]) // the estimate is an upper bound
		left[i] -= n
		bar.Add(n, jobs[i].p.Name)
	}
	gate := budget.NewGate(f.budget.limit)
	items, err := budget.Indexed(len(jobs), 0, func(i int) (item, error) {
		j := jobs[i]
		if gate.Acquire(j.weight) {
			f.log.Debug("point waited for memory", zap.Int("point", i), zap.String("estimate", report.Bytes(j.weight)))
		}
		defer gate.Release(j.weight)
		res, err := runOneEach(f, j.cfg, j.rt, j.prof, j.p, j.inTurn, func(n int) { advance(i, n) })
		if err != nil {
			return item{}, err
		}
		lim, err := headroom(f, j.cfg, j.prof, j.p)
		return item{cfg: j.cfg, preset: j.p, res: res[0], more: res[1:], knobs: knobsOf(fs, axes, j.cfg), limits: lim, layers: f.compute.layers}, err
	}, func(i int) { advance(i, left[i]) })
	if err != nil {
		return nil, err
	}
	bar.Done()
	return eachOverlap(items, len(f.compute.scheds) > 1), nil
}

// eachOverlap spreads the items of several --overlap schedules into one
// each, the schedule a swept column.
func eachOverlap(items []item, several bool) []item {
	if !several {
		return items
	}
	var out []item
	for _, it := range items {
		for _, r := range append([]*moe.Result{it.res}, it.more...) {
			x := it
			x.res, x.more = r, nil
			x.knobs = append(slices.Clone(it.knobs), knob{"overlap", r.Compute.Overlap.String()})
			out = append(out, x)
		}
	}
	return out
}

// loadProfile loads the base profile; --set entries with several values
// become sweep axes (run accepts one value each).
func (f *layerFlags) loadProfile(sweep bool) (*profile.Profile, []setAxis, error) {
	prof, err := profile.Load(f.prof.spec)
	if err != nil {
		return nil, nil, profileErr("--profile", err)
	}
	if err := f.out.checkInputs(outfile.Existing("--profile", prof.Origins)); err != nil {
		return nil, nil, err
	}
	if _, err := profile.SetNames(f.prof.sets); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := f.prof.applyTopology(prof); err != nil {
		return nil, nil, err
	}
	var axes []setAxis
	for _, s := range f.prof.sets {
		n, v, ok := strings.Cut(s, "=")
		if !ok {
			return nil, nil, fmt.Errorf("%w: --set %s: want name=value", errUsage, report.Quote(s))
		}
		n = strings.TrimSpace(n)
		vals := splitList([]string{v})
		if len(vals) == 0 {
			return nil, nil, fmt.Errorf("%w: --set %s: no value", errUsage, report.Quote(s))
		}
		if len(vals) > 1 && !sweep {
			return nil, nil, fmt.Errorf("%w: --set %s: run takes one value; moebench sweep takes lists", errUsage, report.Quote(s))
		}
		for _, x := range vals {
			// Check every value now so a sweep fails before running.
			if err := prof.Clone().Set(n, x); err != nil {
				return nil, nil, fmt.Errorf("%w: --set %s: %v", errUsage, report.Quote(s), err)
			}
		}
		axes = append(axes, setAxis{n, vals})
	}
	return prof, axes, nil
}

// expand builds the cross product of the knobs.
func (f *layerFlags) expand(fs *pflag.FlagSet, axes []setAxis) ([]config, error) {
	w, err := workloads.Get(f.workload)
	if err != nil {
		return nil, fmt.Errorf("%w: --workload: %v", errUsage, err)
	}
	or := func(v []int, def int) []int {
		if len(v) == 0 {
			return []int{def}
		}
		return v
	}
	s0 := w.Shape
	if fs.Changed("topk") {
		s0.TopK = f.topk
	}
	if fs.Changed("hidden") {
		s0.Hidden = f.hidden
	}
	if err := applyDTypes(&s0, f.dtype, f.combine); err != nil {
		return nil, err
	}
	modes, bgs, err := f.modesAndBackgrounds()
	if err != nil {
		return nil, err
	}
	sets := setCombinations(axes)
	var out []config
	for _, ranks := range or(f.ranks, s0.Ranks) {
		for _, per := range or(f.perNode, s0.GPUsPerNode) {
			for _, tok := range or(f.tokens, s0.Tokens) {
				for _, ex := range or(f.experts, s0.Experts) {
					s := s0
					s.Ranks, s.GPUsPerNode, s.Tokens = ranks, per, tok
					if ex != s0.Experts {
						s.Experts, s.PhysicalExperts = ex, 0
					}
					if err := s.Validate(); err != nil {
						return nil, fmt.Errorf("%w: %w", errUsage, err)
					}
					for _, mode := range modes {
						if err := s.CheckWrites(mode, f.chunk); err != nil {
							return nil, fmt.Errorf("%w: %w", errUsage, err)
						}
						nv := f.nvlink
						if !fs.Changed("nvlink") {
							nv = mode == moe.Normal
						}
						for _, b := range bgs {
							for _, st := range sets {
								out = append(out, config{shape: s, mode: mode, nvlink: nv, knobs: transport.Settings{}, bg: b.b, bgName: b.name, sets: st})
							}
						}
					}
				}
			}
		}
	}
	// The mechanisms' knobs multiply the list out further.
	out, err = f.knobs.expand(out)
	if err != nil {
		return nil, err
	}
	if err := f.checkKernels(fs, modes); err != nil {
		return nil, err
	}
	return out, nil
}

// background is a --background value and what it parses to.
type background struct {
	name string
	b    moe.Background
}

// modesAndBackgrounds are --mode's and --background's values, parsed.
func (f *layerFlags) modesAndBackgrounds() ([]moe.Mode, []background, error) {
	var modes []moe.Mode
	for _, m := range f.modes {
		mode, err := moe.ParseMode(m)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --mode: %v", errUsage, err)
		}
		modes = append(modes, mode)
	}
	var bgs []background
	for _, b := range f.backgrounds {
		v, err := workloads.ParseBackground(b)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --background: %v", errUsage, err)
		}
		bgs = append(bgs, background{b, v})
	}
	return modes, bgs, nil
}

// setCombinations is every combination of the --set axes' values.
func setCombinations(axes []setAxis) [][]string {
	sets := [][]string{nil}
	for _, a := range axes {
		var next [][]string
		for _, prev := range sets {
			for _, v := range a.values {
				next = append(next, append(slices.Clone(prev), a.name+"="+v))
			}
		}
		sets = next
	}
	return sets
}

// checkKernels checks --num-sms, --chunk and the compute flags against
// the modes and the engine.
func (f *layerFlags) checkKernels(fs *pflag.FlagSet, modes []moe.Mode) error {
	if f.numSMs < 0 {
		return fmt.Errorf("%w: --num-sms %d: must be 0 (DeepEP's choice) or more", errUsage, f.numSMs)
	}
	if f.chunk < 0 {
		return fmt.Errorf("%w: --chunk %d: must be 0 (16 tokens) or more", errUsage, f.chunk)
	}
	if fs.Changed("chunk") && f.native.engine != "native" && !slices.Contains(modes, moe.Normal) {
		return fmt.Errorf("%w: --chunk: only normal mode writes in chunks (add --mode normal)", errUsage)
	}
	if err := f.compute.check(fs); err != nil {
		return err
	}
	if len(f.compute.scheds) > 0 && f.native.engine == "native" {
		return fmt.Errorf("%w: --overlap: the native engine times communication alone; model the layer with compute (--engine model)", errUsage)
	}
	return nil
}

// resolvePresets turns --transport (mechanisms) or --preset (names) into
// presets (preset.Resolve).
func resolvePresets(transports, names []string, byName bool, prof *profile.Profile) ([]preset.Preset, error) {
	ps, err := preset.Resolve(splitList(transports), splitList(names), byName, prof)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return ps, nil
}

// runOne runs one point; progress, when not nil, hears of delivered
// messages as the simulation runs.
func runOne(f *layerFlags, c config, rt *moe.Routing, prof *profile.Profile, p preset.Preset, inTurn bool, progress func(int)) (*moe.Result, error) {
	res, err := runOneEach(f, c, rt, prof, p, inTurn, progress)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// runOneEach is runOne under each --overlap schedule (one result without
// compute), the layer modelled once for them all.
func runOneEach(f *layerFlags, c config, rt *moe.Routing, prof *profile.Profile, p preset.Preset, inTurn bool, progress func(int)) ([]*moe.Result, error) {
	tr, err := precheckOne(f, c, prof, p)
	if err != nil {
		return nil, err
	}
	cc, err := f.compute.config(f.workload, c.shape, c.mode, prof)
	if err != nil {
		return nil, err
	}
	cfg := moe.LayerConfig{Routing: rt, Mode: c.mode, Transport: tr, Profile: prof, NVLink: c.nvlink, Log: f.log,
		NumSMs: f.numSMs, Chunk: f.chunk, Background: c.bg, NoPayload: f.noPayload, Progress: progress, InTurn: inTurn, Faults: c.fault.plan}
	var res []*moe.Result
	if cc != nil {
		res, err = moe.RunWithComputes(cfg, *cc, f.compute.scheds)
	} else {
		var r *moe.Result
		r, err = moe.RunLayer(cfg)
		res = []*moe.Result{r}
	}
	if err != nil {
		if errors.Is(err, moe.ErrQueueDepth) {
			return nil, fmt.Errorf("%w: preset %s: %w", errUsage, p.Name, err)
		}
		if _, ok := err.(*field.Error); ok {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		return nil, fmt.Errorf("preset %s: %w", p.Name, err)
	}
	return res, nil
}

// knobsOf lists the knobs that take several values in this run, with c's.
func knobsOf(fs *pflag.FlagSet, axes []setAxis, c config) []knob {
	var k []knob
	multi := func(name string) bool {
		v := fs.Lookup(name)
		return v != nil && v.Changed && strings.Contains(v.Value.String(), ",")
	}
	if multi("ranks") {
		k = append(k, knob{"ranks", strconv.Itoa(c.shape.Ranks)})
	}
	if multi("gpus-per-node") {
		k = append(k, knob{"gpus/node", strconv.Itoa(c.shape.GPUsPerNode)})
	}
	if multi("tokens") {
		k = append(k, knob{"tokens", strconv.Itoa(c.shape.Tokens)})
	}
	if multi("experts") {
		k = append(k, knob{"experts", strconv.Itoa(c.shape.Experts)})
	}
	if multi("mode") {
		k = append(k, knob{"mode", c.mode.String()})
	}
	for _, kn := range transport.AllKnobs() {
		if multi(kn.Name) {
			k = append(k, knob{kn.Column, knobValue(kn, c.knobs)})
		}
	}
	if multi("background") {
		k = append(k, knob{"background", c.bgName})
	}
	if multi("loss") {
		k = append(k, knob{"loss", c.fault.loss})
	}
	for i, a := range axes {
		if len(a.values) > 1 {
			_, v, _ := strings.Cut(c.sets[i], "=")
			k = append(k, knob{a.name, v})
		}
	}
	return k
}

// knobValue is a knob's setting as the reports show it: 0 for an integer
// knob left at the preset's value.
func knobValue(k transport.Knob, s transport.Settings) string {
	if v, ok := s[k.Name]; ok || k.IsChoice() {
		return v
	}
	return "0"
}

// describe is the header's account of what ran.
func describe(f *layerFlags, configs []config, spec moe.RoutingSpec) []string {
	c := configs[0]
	s := c.shape
	nv := "off"
	if c.nvlink {
		nv = "on"
	}
	dt := ""
	if w, err := workloads.Get(f.workload); err == nil {
		dt = dtypeNote(s, w.Shape)
	}
	l := []string{
		fmt.Sprintf("workload %s: %d experts, top-%d, hidden %d, %d tokens/rank, EP%d = %s, %s mode, NVLink %s%s",
			f.workload, s.Physical(), s.TopK, s.Hidden, s.Tokens, s.Ranks, nodesOf(s), c.mode, nv, dt),
		fmt.Sprintf("routing %s, %s; background %s", spec, f.limitNote, c.bg),
	}
	if c.mode == moe.Normal && s.Domains() > 1 {
		l = append(l, nodeNote(s, f.numSMs, f.chunk))
	}
	if len(f.prof.sets) > 0 {
		l = append(l, "--set "+strings.Join(f.prof.sets, " --set "))
	}
	if n := c.fault.seeds; n > 0 {
		l = append(l, fmt.Sprintf("sweep: %d configurations × %d fault seeds (first shown above)", len(configs)/n, n))
	} else if len(configs) > 1 {
		l = append(l, fmt.Sprintf("sweep: %d configurations (first shown above)", len(configs)))
	}
	return l
}

// launchNote says when an LL configuration's experts outnumber the warp
// groups DeepEP's kernels launch (32 per SM): the library refuses such a
// layer, and the model runs it with each warp group serving its experts in
// turn. "" when every configuration launches as DeepEP does.
func launchNote(base *profile.Profile, configs []config, numSMs int) string {
	var over []string
	for _, c := range configs {
		if c.mode != moe.LL {
			continue
		}
		p, err := withSets(base, c.sets)
		if err != nil {
			continue
		}
		n, beyond := moe.LLBeyondDeepEP(c.shape, numSMs, int(p.Get("gpu.sms")))
		if e := fmt.Sprintf("%d experts over %d", c.shape.Physical(), n); beyond && !slices.Contains(over, e) {
			over = append(over, e)
		}
	}
	if len(over) == 0 {
		return ""
	}
	return "ll launch: more experts than the launch's warp groups (32 per SM): " + strings.Join(over, ", ") +
		"; DeepEP's LL kernels give each expert its own and refuse such a layer, modelled here with each warp group serving its experts in turn"
}

// configInputs is a configuration's routing (generated once per shape,
// kept in routes) and its profile (base with the configuration's --set
// values).
func configInputs(c config, routes map[moe.Shape]*moe.Routing, spec moe.RoutingSpec, seed uint64, base *profile.Profile) (*moe.Routing, *profile.Profile, error) {
	rt := routes[c.shape]
	if rt == nil {
		var err error
		if rt, err = moe.Generate(c.shape, spec, seed); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		routes[c.shape] = rt
	}
	prof, err := withSets(base, c.sets)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return rt, prof, nil
}

// onProfiles gives each config's shape its profile's NVLink domain
// (moe.Shape.OnProfile), so that estimates, prechecks and reports see the
// domain the run will have; an LL config whose domain spans hosts uses
// NVLink unless --nvlink says otherwise (nvlinkDefault).
func onProfiles(base *profile.Profile, configs []config, nvlinkSet bool) error {
	for i := range configs {
		c := &configs[i]
		prof, err := withSets(base, c.sets)
		if err != nil {
			return fmt.Errorf("%w: --set: %v", errUsage, err)
		}
		s, err := c.shape.OnProfile(prof)
		if err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		c.shape = s
		if !nvlinkSet {
			c.nvlink = nvlinkDefault(s, c.mode)
		}
	}
	return nil
}

// nvlinkDefault is whether a layer uses NVLink when --nvlink is not given:
// normal mode always does (DeepEP's kernels need it); LL does where the
// NVLink domain spans hosts, a rack-scale system whose GPUs reach each
// other over NVLink by design (an NVL72), and not within a node, as
// DeepEP's published LL runs are RDMA only.
func nvlinkDefault(s moe.Shape, mode moe.Mode) bool {
	return mode == moe.Normal || s.DomainGPUs() > s.GPUsPerNode
}

// nodesOf is a shape's hosts, and its NVLink domains where they span
// hosts: "18 nodes × 4 GPUs, one NVLink domain".
func nodesOf(s moe.Shape) string {
	out := fmt.Sprintf("%d nodes × %d GPUs", s.Nodes(), s.GPUsPerNode)
	switch d := s.DomainGPUs(); {
	case d <= s.GPUsPerNode:
	case s.Domains() == 1:
		out += ", one NVLink domain"
	default:
		out += fmt.Sprintf(", %d NVLink domains of %d GPUs", s.Domains(), d)
	}
	return out
}

// withSets is base with a configuration's --set values applied: base
// itself when there are none, else a copy.
func withSets(base *profile.Profile, sets []string) (*profile.Profile, error) {
	if len(sets) == 0 {
		return base, nil
	}
	p := base.Clone()
	if err := p.ApplySets(sets); err != nil {
		return nil, err
	}
	return p, nil
}
