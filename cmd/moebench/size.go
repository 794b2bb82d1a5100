package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

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
	"moebench/transport"
	"moebench/transport/preset"
	"moebench/workloads"
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
	maxQPs              int
	maxBufGiB           float64
	ownMax              map[string]*int // declared limits by resource name
	targetUs, tolerance float64
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

// Bounds of size's float limits: a per-GPU buffer of a pebibyte is past
// any GPU and still counts in int64 bytes; a layer of 10^12 µs (11.6
// days) is past any run and within the simulator's picosecond clock.
const (
	maxBufferGiB = 1 << 20
	maxTargetUs  = 1e12
)

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
	sh, err := f.shard()
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
	study.Deployment.Profile = prof
	h.Profile, h.Origins = prof.Name, prof.Origins
	study.Log = log
	// Every candidate's models are built by then, none modelled yet.
	study.Ready = func() error { return checkSetsRead("size", prof, f.prof.sets) }
	if study.Deployment.InTurn {
		log.Info("dispatch and combine in turn to fit memory", zap.String("budget", report.Bytes(f.budget.limit.Bytes)))
	}
	budget.SoftLimit(f.budget.limit)
	bar := (*report.Progress)(nil)
	study.Progress = func(done, total int, name string) {
		if bar == nil {
			bar = report.NewProgress(stderr, "moebench size", total, report.ProgressOptions{Force: f.progress})
		}
		bar.Step(name)
	}
	cands, err := study.Run(sh.Index, max(1, sh.Count))
	if bar != nil {
		bar.Done()
	}
	if err != nil {
		if errors.Is(err, errUsage) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if !sh.All() {
		doc := &results.SizeShard{Header: h, Shard: shard.Info{Index: sh.Index, Count: sh.Count, Total: totalCandidates(study), Study: shard.StudyPrint(fs)},
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
	fs.IntVar(&f.maxQPs, "max-qps-per-nic", 0, "reject candidates with more QPs (or DCIs) per NIC (0 = no limit)")
	fs.Float64Var(&f.maxBufGiB, "max-buffer-gib", 0, "reject candidates needing more GPU memory, RDMA buffer plus send queues, per GPU in GiB (0 = no limit)")
	f.ownMax = map[string]*int{}
	for _, d := range transport.Held() {
		if d.Limit != nil {
			f.ownMax[d.Name] = fs.Int(d.Limit.Flag, -1, d.Limit.Help)
		}
	}
	fs.Float64Var(&f.targetUs, "target-us", 0, "reject candidates whose layer (dispatch + combine, slowest rank) takes longer, µs (0 = none)")
	fs.Float64Var(&f.tolerance, "tolerance", 0.05, "recommend the leanest candidate within this fraction of the fastest")
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
		return fmt.Errorf("%w: size takes no arguments (got %s)", errUsage, quoteArgs(fs.Args()))
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

// shard is --shard's slice of the study: a shard is JSON for merge, and
// has no front to plot.
func (f *sizeFlags) shard() (shard.Spec, error) {
	sh, err := shard.Parse(f.shardSpec, os.Getenv)
	if err != nil {
		return sh, fmt.Errorf("%w: %w", errUsage, err)
	}
	if !sh.All() && f.out.format != "json" {
		return sh, fmt.Errorf("%w: --shard: a shard is written as JSON for moebench merge; add --format json", errUsage)
	}
	if !sh.All() && f.plot != "" {
		return sh, fmt.Errorf("%w: --plot: a shard has no front; plot the merged result (moebench merge ... --plot)", errUsage)
	}
	return sh, nil
}

// totalCandidates is the size of the whole study, for merge to check.
func totalCandidates(s *sizing.Study) int {
	c, _ := sizing.Candidates(&s.Deployment, s.Space)
	return len(c)
}

// emitSize renders a finished study and its plot; it fails (exit 1) when
// no candidate meets the limits, and then writes no file (the table still
// goes to stdout, to show why).
func emitSize(o *outputFlags, plotPath string, stdout io.Writer, h report.Header, res *sizing.Result) error {
	doc := &results.Size{Header: h, Result: res}
	if err := checkFigure(plotPath, doc, "no candidate was modelled: every one was rejected before its run (the table, without --plot, says why)"); err != nil {
		return err
	}
	o.Hold() // the result and the plot, both or neither
	defer o.Discard()
	if err := o.emit(stdout, func(w io.Writer) error { return results.Render(w, o.format, doc) }); err != nil {
		return err
	}
	if plotPath != "" {
		if err := o.writePlot(plotPath, doc); err != nil {
			return err
		}
	}
	if res.Recommended < 0 {
		return fmt.Errorf("size: no candidate meets the limits%s", o.NotWritten())
	}
	return o.Commit()
}

// sizeCosts are the estimates of the study's largest candidate on each
// mechanism its presets use (sizing.LargestCosts).
func (f *sizeFlags) sizeCosts(s moe.Shape, mode moe.Mode, presets []preset.Preset) []moe.Cost {
	given := map[string][]int{}
	for n, v := range f.knobs.ints {
		if v != nil {
			given[n] = *v
		}
	}
	return sizing.LargestCosts(s, mode, presets, given)
}

// study turns the flags into a sizing study and the report header.
func (f *sizeFlags) study(prof *profile.Profile, nvlinkSet, byPreset bool) (*sizing.Study, report.Header, error) {
	var h report.Header
	w, err := workloads.Get(f.workload)
	if err != nil {
		return nil, h, fmt.Errorf("%w: --workload: %v", errUsage, err)
	}
	d, err := f.deployment(w.Shape, prof, nvlinkSet)
	if err != nil {
		return nil, h, err
	}
	s := d.shape
	spec, err := moe.ParseRoutingSpec(f.routing)
	if err != nil {
		return nil, h, fmt.Errorf("%w: --routing: %v", errUsage, err)
	}
	presets, err := resolvePresets(f.transports, f.presets, byPreset, prof)
	if err != nil {
		return nil, h, err
	}
	jobs, inTurn, err := f.fitJobs(s, d.mode, presets)
	if err != nil {
		return nil, h, err
	}
	rt, err := moe.Generate(s, spec, f.seed)
	if err != nil {
		return nil, h, fmt.Errorf("%w: %w", errUsage, err)
	}
	lists, err := f.knobs.sizeLists()
	if err != nil {
		return nil, h, err
	}
	if err := f.knobs.checkApplies(presets); err != nil {
		return nil, h, err
	}
	lim, err := f.limits()
	if err != nil {
		return nil, h, err
	}
	if f.jobs < 0 {
		return nil, h, fmt.Errorf("%w: --jobs %d: must be 0 (one per core) or more", errUsage, f.jobs)
	}
	cc, err := f.compute.config(f.workload, s, d.mode, prof)
	if err != nil {
		return nil, h, err
	}
	st := &sizing.Study{
		Deployment: sizing.Deployment{Routing: rt, Mode: d.mode, NVLink: d.nvlink, NumSMs: f.numSMs, Chunk: f.chunk,
			Background: d.bg, BothQueues: d.both, NoPayload: f.noPayload, InTurn: inTurn, Compute: cc},
		Space:  sizing.Space{Presets: presets, Knobs: lists},
		Limits: lim,
		Jobs:   jobs,
	}
	h = header("size", nil, "modelled (discrete-event simulation of the transports on the profile's hardware model)")
	h.Seed = &f.seed
	nvs := "off"
	if d.nvlink {
		nvs = "on"
	}
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.Name
	}
	h.Extra = []string{
		fmt.Sprintf("workload %s: %d experts, top-%d, hidden %d, %d tokens/rank, EP%d = %s, %s mode, NVLink %s%s",
			f.workload, s.Physical(), s.TopK, s.Hidden, s.Tokens, s.Ranks, nodesOf(s), d.mode, nvs, dtypeNote(s, w.Shape)),
		fmt.Sprintf("routing %s; background %s; presets %s", spec, f.background, strings.Join(names, ", ")),
	}
	layer := "layer = dispatch + combine of the slowest rank"
	if n := f.compute.note(f.workload); n != nil {
		h.Extra = append(h.Extra, n[0])
		layer = "layer = the layer with its experts' compute, its communication exposed or hidden by the overlap"
	}
	h.Extra = append(h.Extra, fmt.Sprintf("%s; resources per NIC, per GPU and per host of %d GPUs", layer, s.GPUsPerNode))
	return st, h, nil
}

// sizeDeployment is what a study sizes for: the layer's shape on the
// profile, its mode, NVLink, and the background beside it (both: with
// and without queues of its own).
type sizeDeployment struct {
	shape  moe.Shape
	mode   moe.Mode
	nvlink bool
	bg     moe.Background
	both   bool
}

// deployment is the workload's shape with the flags given over it, on
// the profile, and the mode, NVLink and background the flags ask for.
func (f *sizeFlags) deployment(s moe.Shape, prof *profile.Profile, nvlinkSet bool) (sizeDeployment, error) {
	var d sizeDeployment
	for _, o := range []struct {
		flag string
		v    int
		dst  *int
	}{{"tokens", one(f.tokens), &s.Tokens}, {"ranks", one(f.ranks), &s.Ranks}, {"gpus-per-node", one(f.perNode), &s.GPUsPerNode},
		{"topk", f.topk, &s.TopK}, {"hidden", f.hidden, &s.Hidden}} {
		// Given, a value is used as it is (0 included, for the shape's
		// check to refuse); only an absent flag means the workload's.
		if f.changed(o.flag) {
			*o.dst = o.v
		}
	}
	if f.changed("experts") && one(f.experts) != s.Experts {
		s.Experts, s.PhysicalExperts = one(f.experts), 0
	}
	if err := applyDTypes(&s, f.dtype, f.combine); err != nil {
		return d, err
	}
	if err := s.Validate(); err != nil {
		return d, fmt.Errorf("%w: %w", errUsage, err)
	}
	s, err := s.OnProfile(prof)
	if err != nil {
		return d, fmt.Errorf("%w: %w", errUsage, err)
	}
	mode, err := moe.ParseMode(one(f.modes))
	if err != nil {
		return d, fmt.Errorf("%w: --mode: %v", errUsage, err)
	}
	nv := f.nvlink
	if !nvlinkSet {
		nv = nvlinkDefault(s, mode)
	}
	bg, err := workloads.ParseBackground(f.background)
	if err != nil {
		return d, fmt.Errorf("%w: --background: %v", errUsage, err)
	}
	lower := strings.ToLower(f.background)
	both := bg.CTAs > 0 && !strings.Contains(lower, "shared") && !strings.Contains(lower, "reserved")
	if f.numSMs < 0 || f.chunk < 0 {
		return d, fmt.Errorf("%w: --num-sms and --chunk must be 0 (the default) or more", errUsage)
	}
	if f.changed("chunk") && mode != moe.Normal {
		return d, fmt.Errorf("%w: --chunk: only normal mode writes in chunks (add --mode normal)", errUsage)
	}
	if err := s.CheckWrites(mode, f.chunk); err != nil {
		return d, fmt.Errorf("%w: %w", errUsage, err)
	}
	return sizeDeployment{shape: s, mode: mode, nvlink: nv, bg: bg, both: both}, nil
}

// fitJobs refuses, before generating anything, a study the machine
// cannot hold: the largest candidate on each mechanism it considers,
// --jobs at once. Left to its default, --jobs comes down to what fits;
// like run, an LL study too large side by side runs its layers in turn
// when that fits.
func (f *sizeFlags) fitJobs(s moe.Shape, mode moe.Mode, presets []preset.Preset) (jobs int, inTurn bool, err error) {
	costs := f.sizeCosts(s, mode, presets)
	most := f.jobs
	if most == 0 {
		most = runtime.GOMAXPROCS(0)
	}
	least := most
	if f.jobs == 0 {
		least = 1
	}
	jobs, inTurn = f.budget.limit.Jobs(costs, mode, least, most)
	if jobs < most {
		f.log.Info("size runs fewer candidates at once to fit memory", zap.Int("jobs", jobs), zap.Int("cores", most),
			zap.String("budget", report.Bytes(f.budget.limit.Bytes)))
	}
	what := fmt.Sprintf("size of EP%d × %d tokens × top-%d", s.Ranks, s.Tokens, s.TopK)
	if jobs > 1 {
		what += fmt.Sprintf(", %d candidates at once (--jobs)", jobs)
	}
	if inTurn {
		what += ", dispatch and combine in turn"
	}
	for _, c := range costs {
		if err := f.budget.allow(what, budget.Times(c, jobs, inTurn)); err != nil {
			return 0, false, err
		}
	}
	return jobs, inTurn, nil
}

// limits are the study's limits from the flags, the mechanisms' own
// among them.
func (f *sizeFlags) limits() (sizing.Limits, error) {
	for _, c := range []struct {
		flag   string
		v, max float64
	}{{"max-buffer-gib", f.maxBufGiB, maxBufferGiB}, {"target-us", f.targetUs, maxTargetUs}, {"tolerance", f.tolerance, 1}} {
		if err := checkFloat(c.flag, c.v, 0, c.max); err != nil {
			return sizing.Limits{}, err
		}
	}
	lim := sizing.Limits{MaxQPsPerNIC: f.maxQPs, MaxGPUBytes: int64(f.maxBufGiB * (1 << 30)),
		TargetUs: f.targetUs, Tolerance: f.tolerance}
	for _, c := range []struct {
		flag string
		bad  bool
	}{{"max-qps-per-nic", f.maxQPs < 0}, {"max-buffer-gib", f.maxBufGiB < 0},
		{"target-us", f.targetUs < 0}, {"tolerance", f.tolerance < 0 || f.tolerance > 1}} {
		if c.bad {
			return sizing.Limits{}, fmt.Errorf("%w: --%s: %v", errUsage, c.flag, lim.Validate())
		}
	}
	// The limits the mechanisms declare on their own resources.
	for _, d := range transport.Held() {
		v, ok := f.ownMax[d.Name]
		switch {
		case !ok || *v == -1:
		case *v < -1:
			return sizing.Limits{}, fmt.Errorf("%w: --%s: %d, want -1 (no limit) or more", errUsage, d.Limit.Flag, *v)
		default:
			if lim.Own == nil {
				lim.Own = map[string]int{}
			}
			lim.Own[d.Name] = *v
		}
	}
	return lim, nil
}
