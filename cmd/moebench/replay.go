package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"moebench/budget"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/replay"
	"moebench/results"
	"moebench/sweep"
	"moebench/traces"
	"moebench/transport"
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
// layer around it (its counts straight into the replay's options), and
// the run options shared with run.
type replayFlags struct {
	traces   []string
	from     string
	layout   string
	imp      traces.ImportOptions
	o        replay.Options
	workload string
	mode     string
	hidden   int
	dtype    string
	combine  string
	transportFlags
	knobs knobFlags
	kernelFlags
	background string
	groups     groupFlags
	noPayload  bool
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
	fs.IntVar(&f.o.Ranks, "ranks", 0, "expert-parallel ranks (default the trace's ep_size, else the workload's); records without a rank are split evenly over them")
	fs.IntVar(&f.o.GPUsPerNode, "gpus-per-node", 0, "GPUs per node (default the trace's, else the workload's)")
	fs.IntVar(&f.hidden, "hidden", 0, "hidden size (default the workload's)")
	registerDTypes(fs, &f.dtype, &f.combine)
	f.transportFlags.register(fs)
	f.knobs.register(fs, false)
	f.kernelFlags.register(fs, false)
	fs.StringVar(&f.background, "background", "none", backgroundHelp)
	f.groups.register(fs, "group-limited gating to check the trace's tokens against (reported, not enforced; the workload's applies when the trace has its expert count)")
	fs.BoolVar(&f.noPayload, "no-payload-check", false, "skip the payload checksums (placement and exactly-once are always checked)")
	fs.IntVar(&f.o.Steps, "steps", 0, "replay only steps 0..N-1 (0 = every step)")
	fs.IntVar(&f.o.MaxLayers, "max-layers", 0, "stop after N (step, layer) groups (0 = all)")
	fs.IntVar(&f.o.MaxOpen, "max-open", defaultMaxOpen, "(step, layer) groups that may wait for their ranks' records at once")
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
		return fmt.Errorf("%w: replay takes no arguments (got %s); name the trace with --trace", errUsage, report.QuoteArgs(fs.Args()))
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
	if err := checkFiles(f.out.outputs(outfile.Arg{Name: "--plot", Path: *plotPath}), append(outfile.Named("--trace", splitList(f.traces)), profileArgs("--profile", f.prof.spec)...)); err != nil {
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
	rp.Layer.Log, rp.Budget, rp.Faults = log, f.budget.limit, f.faults.of()
	rp.Failed = func(fl *sweep.Failure) { fmt.Fprintf(stderr, "moebench replay: %v\n", fl) }
	budget.SoftLimit(f.budget.limit)
	src, err := f.open()
	if err != nil {
		return err
	}
	defer src.Close()
	if err := setTrace(rp, &f, fs, src); err != nil {
		return err
	}
	// What makes the layer impossible, and a --set nothing reads, refuse
	// the command before any group is run.
	if err := rp.Check(); err != nil {
		return groupErr(&f.budget, err)
	}
	if err := checkSetsRead("replay", rp.Profile, f.prof.sets); err != nil {
		return err
	}
	return emitReplay(rp, &f, *plotPath, stdout, stderr, hook)
}

// emitReplay replays into the format asked for, and the plot when asked,
// both or neither, under a progress bar.
func emitReplay(rp *sweep.Replayer, f *replayFlags, plotPath string, stdout, stderr io.Writer, hook func(done int)) error {
	out := &f.out
	bar := report.NewProgress(stderr, "moebench replay", rp.Expected(), report.ProgressOptions{Force: f.progress})
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
	out.Hold() // the result and the plot, both or neither
	defer out.Discard()
	err := out.emit(stdout, func(w io.Writer) error {
		h := header("replay", rp.Profile, "modelled (discrete-event simulation of the transports on the profile's hardware model, routing replayed from a trace)")
		pl, rerr = rp.Render(w, out.format, h, plotPath != "", progress)
		if rerr = runErr(&f.budget, rerr); rerr == nil && pl != nil {
			// Checked before the output is committed: a figure with
			// nothing to draw leaves no file.
			rerr = checkFigure(plotPath, &pl.Doc, "no layer has a time to draw")
		}
		return rerr
	})
	bar.Done()
	if rerr != nil {
		return rerr
	}
	if err == nil && pl != nil {
		err = out.writePlot(plotPath, &pl.Doc)
	}
	if err != nil {
		return err
	}
	return out.Commit()
}

// open reads the trace through the importer, which streams native traces
// and reads NumPy and count inputs as trace convert does.
func (f *replayFlags) open() (traces.ReadCloser, error) {
	opt := f.imp
	if err := importFormat(f.from, f.layout, &opt); err != nil {
		return nil, err
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

// newReplayer resolves everything that does not need the trace: the mode,
// the background, the presets, the profile, the run options.
func newReplayer(f *replayFlags, fs *pflag.FlagSet) (*sweep.Replayer, error) {
	o := &f.o
	o.Chunk, o.NumSMs = f.chunk, f.numSMs
	// A value given, even the default, overrides the trace's (the
	// workload's) or must match it.
	for _, g := range []struct {
		name string
		p    **int
		v    *int
	}{{"hidden", &o.Hidden, &f.hidden}, {"topk", &o.TopK, &f.imp.TopK}, {"experts", &o.Experts, &f.imp.Experts}} {
		if fs.Changed(g.name) {
			*g.p = g.v
		}
	}
	if fs.Changed("nvlink") {
		o.NVLink = &f.nvlink
	}
	bg, err := sweep.ReplayOptions(o, f.mode, f.background, fs.Changed("chunk"))
	if errors.Is(err, moe.ErrChunkMode) {
		return nil, chunkErr(err)
	}
	if err != nil {
		return nil, inputErr(err)
	}
	if f.imp.Tokens < 0 {
		return nil, fmt.Errorf("%w: --tokens %d: must be 0 or more", errUsage, f.imp.Tokens)
	}
	if err := f.compute.check(fs); err != nil {
		return nil, err
	}
	rp := &sweep.Replayer{Background: bg, Layer: sweep.Layer{NumSMs: f.numSMs, Chunk: f.chunk, NoPayload: f.noPayload, Compute: f.compute.of(f.workload)}}
	if rp.Profile, err = f.prof.load(); err != nil {
		return nil, err
	}
	if rp.Presets, err = resolvePresets(f.transports, f.presets, fs.Changed("preset"), rp.Profile); err != nil {
		return nil, err
	}
	o.Spell = func(field string) string { return "--" + field }
	for _, n := range f.knobs.names() {
		if v := fs.Lookup(n); v.Changed && strings.Contains(v.Value.String(), ",") {
			return nil, fmt.Errorf("%w: --%s: replay takes one value", errUsage, n)
		}
	}
	if err := f.knobs.checkApplies(rp.Presets); err != nil {
		return nil, err
	}
	one, err := sweep.WithKnobs([]sweep.Point{{Knobs: transport.Settings{}}}, f.knobs.axes())
	if err != nil {
		return nil, inputErr(err)
	}
	rp.Knobs = one[0].Knobs
	return rp, nil
}

// setTrace resolves the replay's layer from the trace's header and the
// flags: the workload with its dtypes, the group limit the flags give.
func setTrace(rp *sweep.Replayer, f *replayFlags, fs *pflag.FlagSet, src traces.Reader) error {
	o := f.o
	o.Name = strings.Join(splitList(f.traces), ",")
	w, err := sweep.Workload(f.workload, f.dtype, f.combine)
	if err != nil {
		return inputErr(err)
	}
	o.Workload = w
	if fs.Changed("topk-groups") || fs.Changed("expert-groups") {
		lim, err := f.groups.limit(fs, w)
		if err != nil {
			return err
		}
		o.Limit = &lim
	}
	if err := rp.Open(o, src); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// groupErr maps a group's or the layer's refusal to the command line:
// over the budget b, or a point's refusal as run maps it (replay takes no
// --over-limit: no hint to run over a limit), and for queues too shallow
// the trace's way out.
func groupErr(b *budgetFlags, err error) error {
	if de := (*sweep.ReplayDepthError)(nil); errors.As(err, &de) {
		// The tokens come from the trace, not a flag: say what else helps.
		return fmt.Errorf("%w: %v; replay with --mode normal or on more --ranks", errUsage, de)
	}
	return b.usage(pointErr(err, false))
}

// runErr maps a replay's error to the command line: a group's own usage
// error reads without its marker mid-message.
func runErr(b *budgetFlags, err error) error {
	var ge *replay.GroupError
	switch {
	case errors.Is(err, replay.ErrInput):
		return fmt.Errorf("%w: %w", errUsage, err)
	case errors.As(err, &ge):
		if e := groupErr(b, ge.Err); errors.Is(e, errUsage) {
			return fmt.Errorf("%w: %s: step %d, layer %d: %s", errUsage, ge.Trace, ge.Step, ge.Layer, message(e))
		}
	}
	return err // a group's other errors read "TRACE: step S, layer L: ..."
}
