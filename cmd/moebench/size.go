package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"moebench/budget"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/internal/shard"
	"moebench/moe"
	"moebench/profile"
	"moebench/results"
	"moebench/routing"
	"moebench/sizing"
	"moebench/sweep"
	"moebench/transport"
	"moebench/transport/preset"
)

const sizeExamples = `  moebench size --workload deepseek-v3 --ranks 256 --gpus-per-node 8 --tokens 128
  moebench size --ranks 64 --tokens 32 --max-qps-per-nic 4096 --max-buffer-gib 2 --proxy-cores 4
  moebench size --ranks 16 --background bulk:64 --transport mini-gda,mini-proxy   # shared or reserved queues
  moebench size --preset deepep-v1 --qps-per-peer 1,2,4,8,16 --target-us 900 --plot front.svg
  moebench size --ranks 256 --shard auto --format json --out size-$SLURM_ARRAY_TASK_ID.json   # one task of a job array
`

// sizeFlags are the deployment, the space and the limits of a study.
type sizeFlags struct {
	shapeFlags
	dtype, routing, background, combine string
	kernelFlags
	seed uint64
	transportFlags
	knobs               knobFlags
	limits              sizing.LimitsRequest // Own filled from ownMax
	ownMax              map[string]*int      // declared limits by resource name
	jobs                int
	shardSpec, plot     string
	noPayload, progress bool
	prof                profileFlags
	out                 outputFlags
	logs                logFlags
	budget              budgetFlags
	changed             func(flag string) bool
	log                 *zap.Logger
	compute             computeFlags // --overlap
}

func runSize(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("size", "size [flags]", sizeExamples, stdout)
	var f sizeFlags
	f.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	log, err := f.logs.logger(stderr)
	if err != nil {
		return err
	}
	defer log.Sync()
	// A shard has no front to plot.
	sh, err := parseShard(f.shardSpec, f.out.format, f.plot, "a shard has no front; plot the merged result (moebench merge ... --plot)")
	if err != nil {
		return err
	}
	prof, err := f.prof.load()
	if err != nil {
		return err
	}
	f.changed, f.log = fs.Changed, log
	study, h, err := f.study(prof, fs.Changed("nvlink"), fs.Changed("preset"))
	if err != nil {
		return err
	}
	h.Profile, h.Origins = prof.Name, prof.Origins
	// Every candidate's models are built by then, none modelled yet.
	study.Ready = func() error { return checkSetsRead("size", prof, f.prof.sets) }
	budget.SoftLimit(f.budget.limit)
	bar := report.NewDeferred(stderr, "moebench size", report.ProgressOptions{Force: f.progress})
	study.Progress = bar.Step
	cands, err := study.Run(sh.Index, max(1, sh.Count))
	bar.Done()
	if err != nil {
		if errors.Is(err, errUsage) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if !sh.All() {
		doc := &results.SizeShard{Header: h, Shard: shard.Info{Index: sh.Index, Count: sh.Count, Total: study.Total(), Study: shard.StudyPrint(fs)},
			Limits: study.Limits, Candidates: cands}
		return f.out.emit(stdout, func(w io.Writer) error { return results.Render(w, "json", doc) })
	}
	res, err := sizing.Finish(cands, study.Limits)
	if err != nil {
		return err
	}
	return emitSize(&f.out, f.plot, stdout, h, res)
}

// register adds size's flags to fs.
func (f *sizeFlags) register(fs *pflag.FlagSet) {
	f.shapeFlags.register(fs, false)
	registerDTypes(fs, &f.dtype, &f.combine)
	fs.StringVar(&f.routing, "routing", "uniform", "synthetic routing (one value): "+routing.Syntax)
	fs.Uint64Var(&f.seed, "seed", 1, "routing seed")
	f.kernelFlags.register(fs, false)
	fs.StringVar(&f.background, "background", "none", backgroundHelp+"; without shared or reserved both are tried")
	f.transportFlags.register(fs)
	f.knobs.register(fs, true)
	fs.IntVar(&f.limits.MaxQPsPerNIC, "max-qps-per-nic", 0, "reject candidates with more QPs (or DCIs) per NIC (0 = no limit)")
	fs.Float64Var(&f.limits.MaxBufferGiB, "max-buffer-gib", 0, "reject candidates needing more GPU memory, RDMA buffer plus send queues, per GPU in GiB (0 = no limit)")
	f.ownMax = map[string]*int{}
	for _, d := range transport.Held() {
		if d.Limit != nil {
			f.ownMax[d.Name] = fs.Int(d.Limit.Flag, -1, d.Limit.Help)
		}
	}
	fs.Float64Var(&f.limits.TargetUs, "target-us", 0, "reject candidates whose layer (dispatch + combine, slowest rank) takes longer, µs (0 = none)")
	fs.Float64Var(&f.limits.Tolerance, "tolerance", 0.05, "recommend the leanest candidate within this fraction of the fastest")
	fs.IntVar(&f.jobs, "jobs", 0, "candidates modelled at once (0 = one per core)")
	fs.StringVar(&f.shardSpec, "shard", "", "run one slice of the study: I/N, auto (a Slurm job array) or auto/N (Slurm or a Kubernetes Indexed Job); merge the JSON with moebench merge")
	fs.StringVar(&f.plot, "plot", "", "also draw the Pareto front to `FILE` (.svg or .png)")
	fs.BoolVar(&f.noPayload, "no-payload-check", false, "skip the payload checksums in the runs")
	fs.BoolVar(&f.progress, "progress", false, "draw the progress bar even when stderr is not a terminal")
	f.prof.register(fs)
	f.prof.registerTopology(fs)
	f.out.register(fs)
	f.logs.register(fs)
	f.budget.registerInTurn(fs)
	f.compute.registerOverlap(fs)
}

// check refuses what size's flags say on their own.
func (f *sizeFlags) check(fs *pflag.FlagSet) error {
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: size takes no arguments (got %s)", errUsage, report.QuoteArgs(fs.Args()))
	}
	if err := f.out.check(); err != nil {
		return err
	}
	if err := f.compute.check(fs); err != nil {
		return err
	}
	if err := f.budget.check(); err != nil {
		return err
	}
	if err := checkPlotPath("--plot", f.plot); err != nil {
		return err
	}
	return checkFiles(f.out.outputs(outfile.Arg{Name: "--plot", Path: f.plot}), profileArgs("--profile", f.prof.spec))
}

// emitSize renders a finished study and its plot; it fails (exit 1) when
// no candidate meets the limits, and then writes no file (the table still
// goes to stdout, to show why).
func emitSize(o *outputFlags, plotPath string, stdout io.Writer, h report.Header, res *sizing.Result) error {
	doc := &results.Size{Header: h, Result: res}
	return o.emitPlotted(stdout, func(w io.Writer) error { return results.Render(w, o.format, doc) }, plotPath, doc,
		"no candidate was modelled: every one was rejected before its run (the table, without --plot, says why)",
		func() error {
			if res.Recommended < 0 {
				return fmt.Errorf("size: no candidate meets the limits%s", o.NotWritten())
			}
			return nil
		})
}

// study turns the flags into a sizing study and the report header.
func (f *sizeFlags) study(prof *profile.Profile, nvlinkSet, byPreset bool) (*sizing.Study, report.Header, error) {
	var h report.Header
	w, err := sweep.Workload(f.workload, f.dtype, f.combine)
	if err != nil {
		return nil, h, inputErr(err)
	}
	s := f.shapeOver(w.Shape)
	req := sizing.Request{Shape: s, Profile: prof, Mode: one(f.modes), Background: f.background,
		NumSMs: f.numSMs, Chunk: f.chunk, ChunkGiven: f.changed("chunk"), Routing: f.routing, Seed: f.seed,
		Transports: splitList(f.transports), Presets: splitList(f.presets), ByPreset: byPreset,
		Knobs: f.knobs.lists(), Jobs: f.jobs, Budget: f.budget.limit, NoPayload: f.noPayload, Log: f.log,
		Limits: f.limits}
	req.Limits.Own = map[string]int{}
	if nvlinkSet {
		req.NVLink = &f.nvlink
	}
	for n, v := range f.ownMax {
		req.Limits.Own[n] = *v
	}
	st, err := sizing.Plan(req)
	if err != nil {
		return nil, h, f.planErr(err)
	}
	d := &st.Deployment
	if d.Compute, err = f.compute.config(f.workload, d.Routing.Shape, d.Mode, prof); err != nil {
		return nil, h, err
	}
	return st, f.header(st), nil
}

// shapeOver is the workload's shape with the shape flags given over it
// (moe.Shape.Over): only an absent flag means the workload's.
func (f *sizeFlags) shapeOver(s moe.Shape) moe.Shape {
	given := map[string]int{}
	for n, v := range map[string]int{"tokens": one(f.tokens), "ranks": one(f.ranks), "gpus-per-node": one(f.perNode),
		"topk": f.topk, "hidden": f.hidden, "experts": one(f.experts)} {
		if f.changed(n) {
			given[n] = v
		}
	}
	return s.Over(given)
}

// planErr is a refusal of sizing.Plan as the command line's.
func (f *sizeFlags) planErr(err error) error {
	var over *sizing.OverBudget
	switch {
	case errors.Is(err, sizing.ErrNegative):
		return fmt.Errorf("%w: --num-sms and --chunk must be 0 (the default) or more", errUsage)
	case errors.Is(err, moe.ErrChunkMode):
		return chunkErr(err)
	case errors.As(err, new(*preset.KnobError)):
		return knobErr(err)
	case errors.As(err, &over):
		ex := *over.Err
		if over.Jobs > 1 {
			ex.What += fmt.Sprintf(", %d candidates at once (--jobs)", over.Jobs)
		}
		if over.InTurn {
			ex.What += ", dispatch and combine in turn"
		}
		return f.budget.usage(&ex)
	}
	return fmt.Errorf("%w: %w", errUsage, err)
}

// header is the report header of study st.
func (f *sizeFlags) header(st *sizing.Study) report.Header {
	h := header("size", nil, "modelled (discrete-event simulation of the transports on the profile's hardware model)")
	h.Seed = &f.seed
	h.Extra = st.Header(f.workload, f.background, one(f.compute.note(f.workload)))
	return h
}
