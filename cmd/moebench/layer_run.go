package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/field"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/profile"
	"moebench/routing"
	"moebench/sweep"
	"moebench/transport/preset"
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
	dtype   string
	combine string
	routing string
	groups  groupFlags
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

// sweepOnly are the flags sweep takes as lists and run as one value,
// besides the mechanisms' knobs.
var sweepOnly = []string{"mode", "tokens", "ranks", "gpus-per-node", "experts", "background", "gpus", "virtual-ranks"}

func layerCommand(name string, args []string, stdout, stderr io.Writer) error {
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
	if err := f.checkFlags(fs, name, name == "sweep"); err != nil {
		return err
	}
	base, axes, err := f.loadProfile(name == "sweep")
	if err != nil {
		return err
	}
	points, err := f.expand(fs, axes)
	if err != nil {
		return err
	}
	if err := sweep.OnProfiles(base, points, fs.Changed("nvlink")); err != nil {
		return inputErr(err)
	}
	if points, err = f.faults.expand(points); err != nil {
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
		return runNativeLayer(name, f, fs, base, axes, points, spec, stdout, stderr)
	}
	return f.runModel(name, fs, base, axes, points, spec, stdout, stderr)
}

// runModel is run and sweep on the model: the points placed in the
// budget, checked, run concurrently with a progress bar, and reported.
func (f *layerFlags) runModel(name string, fs *pflag.FlagSet, base *profile.Profile, axes []sweep.SetAxis, points []sweep.Point,
	spec moe.RoutingSpec, stdout, stderr io.Writer) error {
	presets, err := resolvePresets(f.transports, f.presets, fs.Changed("preset"), base)
	if err != nil {
		return err
	}
	if err := f.knobs.checkApplies(presets); err != nil {
		return err
	}
	budget.SoftLimit(f.budget.limit)
	// The model's synthetic routing; the native engine keeps its own.
	if spec.Limit, err = f.groupLimit(fs, points); err != nil {
		return err
	}
	sw := &sweep.Sweep{Layer: f.layer(), Command: name, Points: points, Presets: presets, Budget: f.budget.limit,
		Inputs: &sweep.Inputs{Base: base, Routing: spec, Seed: f.seed}, Shard: f.ext.shard.Has, Axes: axes, Varies: varies(fs)}
	plan, err := sw.Place()
	if err != nil {
		return f.budget.usage(err)
	}
	// What makes a point impossible, and a --set nothing reads, refuse
	// the command before any layer is built.
	if err := f.precheck(name, base, points, presets); err != nil {
		return err
	}
	bar := report.NewProgress(stderr, "moebench "+name, plan.Total, report.ProgressOptions{Force: f.progress})
	items, ran, err := sw.Run(plan, bar.Add)
	if err != nil {
		return pointErr(err, true)
	}
	bar.Done()
	f.ext.points = ran
	h := header(name, base, "modelled (discrete-event simulation of the transports on the profile's hardware model)")
	h.Seed = &f.seed
	sets := ""
	if len(f.prof.sets) > 0 {
		sets = "--set " + strings.Join(f.prof.sets, " --set ")
	}
	h.Extra = sweep.Account(sweep.Header{Workload: f.workload, Limit: describeLimit(spec.Limit, fs), NumSMs: f.numSMs, Chunk: f.chunk, Sets: sets,
		Faults: f.faults.of(), Compute: f.compute.of(f.workload)}, base, points, spec, items)
	if err := f.ext.emit(&f.out, stdout, h, f.workload, items, len(points)*len(presets)); err != nil {
		return err
	}
	if f.faults.seeds == 0 {
		warnFailed(stderr, name, items)
	}
	return nil
}

// varies says which flags take several values, by name.
func varies(fs *pflag.FlagSet) func(string) bool {
	return func(name string) bool {
		v := fs.Lookup(name)
		return v != nil && v.Changed && strings.Contains(v.Value.String(), ",")
	}
}

// layer is what every point shares, from the flags.
func (f *layerFlags) layer() sweep.Layer {
	return sweep.Layer{NumSMs: f.numSMs, Chunk: f.chunk, NoPayload: f.noPayload, Over: f.limits.names(), Log: f.log,
		Compute: f.compute.of(f.workload)}
}

// inputErr marks an error of the caller's input (sweep.ErrInput) as the
// command line's.
func inputErr(err error) error {
	if err != nil && errors.Is(err, sweep.ErrInput) && !errors.Is(err, errUsage) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return err
}

// pointErr maps a point's error to the command line: a layer's refusal
// names the flags that set what it refuses, and, where the command takes
// --over-limit (overLimit), how to run over the limit it names.
func pointErr(err error, overLimit bool) error {
	var ce *sweep.CheckError
	if errors.As(err, &ce) {
		e := precheckErr(ce)
		if hint := limitHint(ce.Err); overLimit && hint != "" {
			return fmt.Errorf("%w%s", e, hint)
		}
		return e
	}
	return inputErr(err)
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

// loadProfile loads the base profile; --set entries with several values
// become sweep axes (run accepts one value each).
func (f *layerFlags) loadProfile(lists bool) (*profile.Profile, []sweep.SetAxis, error) {
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
	axes, err := sweep.SetAxes(prof, f.prof.sets, !lists)
	if errors.Is(err, sweep.ErrList) {
		return nil, nil, fmt.Errorf("%w: --set %s: run takes one value; moebench sweep takes lists", errUsage, field.Fields(err)[0].Value)
	}
	if err != nil {
		return nil, nil, inputErr(err)
	}
	return prof, axes, nil
}

// expand builds the cross product of the knobs.
func (f *layerFlags) expand(fs *pflag.FlagSet, axes []sweep.SetAxis) ([]sweep.Point, error) {
	r := sweep.Request{Workload: f.workload, Dispatch: f.dtype, Combine: f.combine, Modes: f.modes, Backgrounds: f.backgrounds,
		Grid: sweep.Grid{Ranks: f.ranks, GPUsPerNode: f.perNode, Tokens: f.tokens, Experts: f.experts, Chunk: f.chunk, Sets: axes, Knobs: f.knobs.axes()}}
	r.Given = map[string]int{}
	for n, v := range map[string]int{"topk": f.topk, "hidden": f.hidden} {
		if fs.Changed(n) {
			r.Given[n] = v
		}
	}
	if fs.Changed("nvlink") {
		r.NVLink = &f.nvlink
	}
	g, err := r.Resolve()
	if err != nil {
		return nil, inputErr(err)
	}
	out, err := g.Points()
	if err != nil {
		return nil, inputErr(err)
	}
	return out, f.checkKernels(fs, g.Modes)
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
	if err := moe.CheckChunk(fs.Changed("chunk") && f.native.engine != "native", modes...); err != nil {
		return chunkErr(err)
	}
	if err := f.compute.check(fs); err != nil {
		return err
	}
	if len(f.compute.scheds) > 0 && f.native.engine == "native" {
		return fmt.Errorf("%w: --overlap: the native engine times communication alone; model the layer with compute (--engine model)", errUsage)
	}
	return nil
}

// chunkErr is moe.CheckChunk's refusal as the command line's, with the
// flag that lifts it.
func chunkErr(err error) error { return fmt.Errorf("%w: %w (add --mode normal)", errUsage, err) }

// resolvePresets turns --transport (mechanisms) or --preset (names) into
// presets (preset.Resolve).
func resolvePresets(transports, names []string, byName bool, prof *profile.Profile) ([]preset.Preset, error) {
	ps, err := preset.Resolve(splitList(transports), splitList(names), byName, prof)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return ps, nil
}
