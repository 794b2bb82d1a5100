package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/traces"
	"moebench/transport/preset"
	"moebench/transport/profile"
	"moebench/workloads"
)

const replayExamples = `  moebench trace gen --routing powerlaw:1.2 --ranks 16 --experts 64 --tokens 32 --layers 4 --out skew.bin
  moebench replay --trace skew.bin                          # every (step, layer) on every transport
  moebench replay --trace skew.bin --transport mini-gda --format json --out replay.json
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
	traces     []string
	from       string
	layout     string
	imp        traces.ImportOptions
	workload   string
	mode       string
	ranks      int
	perNode    int
	hidden     int
	dtype      string
	transports []string
	presets    []string
	qps        int
	nvlink     bool
	numSMs     int
	chunk      int
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
	fs.StringVar(&f.dtype, "dispatch-dtype", "", "dispatch element type: fp8 or bf16 (default the workload's)")
	fs.StringSliceVar(&f.transports, "transport", []string{"all"}, "mechanisms to compare, each through its own preset: mini-gda, mini-proxy, dc, or all")
	fs.StringSliceVar(&f.presets, "preset", nil, "transport presets instead of --transport (list, or all): "+strings.Join(preset.Names(), ", "))
	fs.IntVar(&f.qps, "qps-per-peer", 0, "QPs per peer, overriding the preset's (0 = the preset's)")
	fs.BoolVar(&f.nvlink, "nvlink", false, "let same-node peers use NVLink (default off in ll mode, on in normal mode)")
	fs.IntVar(&f.numSMs, "num-sms", 0, "SMs the kernels use (0 = DeepEP's choice; normal mode: 24, two per channel)")
	fs.IntVar(&f.chunk, "chunk", 0, "normal mode: tokens per RDMA write (0 = 16 on one node, DeepEP's recommended config for the rank count across nodes)")
	fs.StringVar(&f.background, "background", "none", "traffic beside the layer: none, bulk-shared, bulk-reserved or bulk:N[:shared|reserved][:BYTES]")
	f.groups.register(fs, "group-limited gating to check the trace's tokens against (reported, not enforced; the workload's applies when the trace has its expert count)")
	fs.BoolVar(&f.noPayload, "no-payload-check", false, "skip the payload checksums (placement and exactly-once are always checked)")
	fs.IntVar(&f.steps, "steps", 0, "replay only steps 0..N-1 (0 = every step)")
	fs.IntVar(&f.maxLayers, "max-layers", 0, "stop after N (step, layer) groups (0 = all)")
	fs.IntVar(&f.maxOpen, "max-open", defaultMaxOpen, "(step, layer) groups that may wait for their ranks' records at once")
	fs.BoolVar(&f.progress, "progress", false, "draw the progress bar even when stderr is not a terminal")
	f.prof.register(fs)
	f.out.register(fs)
	f.logs.register(fs)
	f.budget.register(fs)
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
		return fmt.Errorf("%w: replay takes no arguments (got %q); name the trace with --trace", errUsage, fs.Args())
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
	f.imp.MaxBytes = f.budget.bytes
	if err := checkPlotPath("--plot", *plotPath); err != nil {
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
	rp.lf.log = log
	src, err := f.open()
	if err != nil {
		return err
	}
	defer src.Close()
	if err := rp.setTrace(&f, fs, src); err != nil {
		return err
	}
	bar := report.NewProgress(stderr, "moebench replay", rp.expected(), report.ProgressOptions{Force: f.progress})
	rp.step = func(g *traceGroup) { bar.Step(fmt.Sprintf("step %d layer %d", g.step, g.layer)) }
	rp.hook = hook
	// A replay error is the trace's or the model's, not the output file's:
	// return it as it is, without the atomic writer's "writing FILE".
	var rerr error
	var pl *replayPlot
	err = f.out.emit(stdout, func(w io.Writer) error {
		rerr = rp.run(teeReplayPlot(newReplaySink(w, f.out.format, rp), *plotPath, &pl))
		return rerr
	})
	bar.Done()
	if rerr != nil {
		return rerr
	}
	if err == nil && pl != nil {
		err = writePlot(*plotPath, replayFigure(&pl.doc))
	}
	return err
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
		return nil, fmt.Errorf("%w: --layout %q is not layers-first or tokens-first", errUsage, f.layout)
	}
	// The header keeps what the data says; --ranks and --gpus-per-node
	// shape the layer, not the trace.
	opt.EPSize, opt.GPUsPerNode, opt.Provenance = 0, 0, ""
	src, err := traces.Import(splitList(f.traces), opt)
	if errors.Is(err, traces.ErrOption) {
		return nil, fmt.Errorf("%w: --trace: %v", errUsage, err)
	}
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return src, nil
}

// replayer groups a trace's records by (step, layer), runs each complete
// group through the layer on every preset and hands the results to a
// sink. It holds the open groups and the accumulators, nothing else, so
// its memory does not grow with the trace.
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
	qps     int
	presets []preset.Preset
	prof    *profile.Profile
	lf      layerFlags // the run options runOne reads
	wl      string
	limit   moe.GroupLimit // resolved; off when not checked
	limitBy string         // where the limit came from, or why none

	steps, maxLayers, maxOpen int

	open     []*traceGroup
	byKey    map[[2]int]*traceGroup
	unranked int   // lowest step an unranked record may still carry
	nrec     int64 // records read, numbered from 0 as the binary reader numbers them
	done     int
	began    bool

	agg  *replayAgg
	step func(*traceGroup) // after each group, for the progress bar
	hook func(done int)    // after each group, for tests
}

// traceGroup is one (step, layer) while its records arrive.
type traceGroup struct {
	step, layer int
	ranked      bool
	recs        []moe.TraceTokens
	at          []int64 // each record's index in the trace
	seen        []bool  // ranks recorded, when ranked
	nseen       int
}

// groupResult is one replayed (step, layer) on every preset.
type groupResult struct {
	step, layer int
	shape       moe.Shape
	tokens      int // over every source rank
	traffic     moe.Traffic
	rankLoad    moe.Load
	expertLoad  moe.Load
	groups      moe.GroupCheck // tokens against the group limit, when checked
	runs        []presetRun
}

type presetRun struct {
	preset preset.Preset
	res    *moe.Result
}

// newReplayer resolves everything that does not need the trace: the mode,
// the background, the presets, the profile, the run options.
func newReplayer(f *replayFlags, fs *pflag.FlagSet) (*replayer, error) {
	rp := &replayer{byKey: map[[2]int]*traceGroup{}, unranked: math.MinInt, wl: f.workload}
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
	for _, c := range []struct {
		name string
		v    int
		what string
	}{
		{"qps-per-peer", f.qps, "0 (the preset's) or more"}, {"num-sms", f.numSMs, "0 (DeepEP's choice) or more"},
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
	rp.qps, rp.steps, rp.maxLayers, rp.maxOpen = f.qps, f.steps, f.maxLayers, f.maxOpen
	rp.lf = layerFlags{numSMs: f.numSMs, chunk: f.chunk, noPayload: f.noPayload}
	if rp.presets, err = resolvePresets(f.transports, f.presets, fs.Changed("preset")); err != nil {
		return nil, err
	}
	if rp.prof, err = f.prof.loadFor("replay", &f.out); err != nil {
		return nil, err
	}
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
	if f.dtype != "" {
		if s.Dispatch, err = moe.ParseDType(f.dtype); err != nil {
			return fmt.Errorf("%w: --dispatch-dtype: %v", errUsage, err)
		}
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
		return fmt.Errorf("%w: layer shape from %s and the flags: %v", errUsage, rp.name, shapeErr(err))
	}
	rp.base = s
	if err := rp.setLimit(f, fs, w); err != nil {
		return err
	}
	rp.agg = newReplayAgg(s, rp.presets)
	rp.agg.mode, rp.agg.nvlink = rp.mode, rp.nvlink
	return nil
}

// expected is the number of groups the progress bar counts to, or 0 when
// the trace does not say.
func (rp *replayer) expected() int {
	n := 0
	if rp.h.Steps > 0 {
		st := rp.h.Steps
		if rp.steps > 0 {
			st = min(st, rp.steps)
		}
		n = st * rp.h.Layers
	}
	if rp.maxLayers > 0 && (n == 0 || rp.maxLayers < n) {
		n = rp.maxLayers
	}
	return n
}

// where names a record for errors: the trace, its index and coordinates.
func (rp *replayer) where(at int64, step, layer, rank int) string {
	return fmt.Sprintf("%s: record %d (step %d, layer %d, rank %d)", rp.name, at, step, layer, rank)
}

// run reads the trace to the end (or the limits), replaying each group as
// it completes.
func (rp *replayer) run(sink replaySink) error {
	for rp.maxLayers == 0 || rp.done < rp.maxLayers {
		rec, err := rp.src.Next()
		if err == io.EOF {
			return rp.finish(sink)
		}
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		at := rp.nrec
		rp.nrec++
		if rp.steps > 0 && rec.Step >= rp.steps {
			continue
		}
		if err := rp.add(sink, rec, at); err != nil {
			return err
		}
	}
	return rp.end(sink)
}

// add files one record under its group and replays what it completes.
func (rp *replayer) add(sink replaySink, rec traces.Record, at int64) error {
	R := rp.base.Ranks
	ranked := rec.Rank >= 0
	if ranked {
		if rp.h.EPSize > 0 && rp.h.EPSize != R {
			return fmt.Errorf("%w: %s: the trace records ranks of EP%d, replaying on %d ranks (%s); ranks can be changed only for traces that record none", errUsage,
				rp.where(at, rec.Step, rec.Layer, rec.Rank), rp.h.EPSize, R, rp.ranksBy)
		}
		if rec.Rank >= R {
			return fmt.Errorf("%w: %s: rank %d is outside the %d ranks (%s)", errUsage, rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Rank, R, rp.ranksBy)
		}
	} else {
		// Unranked groups end when a later step begins: close those of
		// earlier steps, and refuse records of a step already closed.
		if rec.Step < rp.unranked {
			return fmt.Errorf("%s: records without a rank must come step by step; step %d follows step %d", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Step, rp.unranked)
		}
		if rec.Step > rp.unranked {
			rp.unranked = rec.Step
			for _, g := range slices.Clone(rp.open) {
				if !g.ranked && g.step < rec.Step {
					if err := rp.flush(sink, g); err != nil || rp.limited() {
						return err
					}
				}
			}
		}
	}
	key := [2]int{rec.Step, rec.Layer}
	g := rp.byKey[key]
	if g == nil {
		if len(rp.open) >= rp.maxOpen {
			o := rp.open[0]
			return fmt.Errorf("%s: more than %d (step, layer) groups are waiting for records at once (the oldest is step %d, layer %d): the trace interleaves groups beyond the buffer; raise --max-open",
				rp.where(at, rec.Step, rec.Layer, rec.Rank), rp.maxOpen, o.step, o.layer)
		}
		g = &traceGroup{step: rec.Step, layer: rec.Layer, ranked: ranked}
		if ranked {
			g.seen = make([]bool, R)
		}
		rp.byKey[key] = g
		rp.open = append(rp.open, g)
	}
	if g.ranked != ranked {
		return fmt.Errorf("%s: step %d, layer %d mixes records with and without a rank", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Step, rec.Layer)
	}
	if ranked {
		if g.seen[rec.Rank] {
			return fmt.Errorf("%s: rank %d already has a record for step %d, layer %d", rp.where(at, rec.Step, rec.Layer, rec.Rank), rec.Rank, rec.Step, rec.Layer)
		}
		g.seen[rec.Rank] = true
		g.nseen++
	}
	c := rec.Clone() // the reader reuses its buffers
	g.recs = append(g.recs, moe.TraceTokens{Rank: c.Rank, Idx: c.TopkIdx, Weights: c.TopkWeights})
	g.at = append(g.at, at)
	if ranked && g.nseen == R {
		return rp.flush(sink, g)
	}
	return nil
}

func (rp *replayer) limited() bool { return rp.maxLayers > 0 && rp.done >= rp.maxLayers }

// finish replays the unranked groups still open at the end of the trace;
// a ranked group still open lacks some ranks' records.
func (rp *replayer) finish(sink replaySink) error {
	for _, g := range slices.Clone(rp.open) {
		if rp.limited() {
			break
		}
		if g.ranked {
			var miss []string
			for r, ok := range g.seen {
				if !ok {
					if len(miss) == 8 {
						miss = append(miss, "…")
						break
					}
					miss = append(miss, strconv.Itoa(r))
				}
			}
			return fmt.Errorf("%s: the trace ends with step %d, layer %d recorded by %d of %d ranks (missing %s; first record %d)",
				rp.name, g.step, g.layer, g.nseen, len(g.seen), strings.Join(miss, ", "), g.at[0])
		}
		if err := rp.flush(sink, g); err != nil {
			return err
		}
	}
	return rp.end(sink)
}

func (rp *replayer) end(sink replaySink) error {
	if rp.done == 0 {
		what := "the trace holds no records"
		if rp.steps > 0 {
			what += " of steps below --steps " + strconv.Itoa(rp.steps)
		}
		return fmt.Errorf("%s: nothing to replay: %s", rp.name, what)
	}
	return sink.end(rp.agg)
}

// flush replays group g on every preset and forgets it.
func (rp *replayer) flush(sink replaySink, g *traceGroup) error {
	delete(rp.byKey, [2]int{g.step, g.layer})
	rp.open = slices.DeleteFunc(rp.open, func(o *traceGroup) bool { return o == g })
	gr, err := rp.replay(g)
	if err != nil {
		return err
	}
	if !rp.began {
		rp.began = true
		if err := sink.begin(); err != nil {
			return err
		}
	}
	rp.agg.add(gr)
	if err := sink.group(gr); err != nil {
		return err
	}
	rp.done++
	if rp.step != nil {
		rp.step(g)
	}
	if rp.hook != nil {
		rp.hook(rp.done)
	}
	return nil
}

func (rp *replayer) replay(g *traceGroup) (*groupResult, error) {
	s := rp.base
	per, err := moe.TraceRankTokens(s.Ranks, s.TopK, g.recs)
	if err != nil {
		return nil, fmt.Errorf("%s: step %d, layer %d: %v", rp.name, g.step, g.layer, err)
	}
	s.Tokens = max(1, slices.Max(per))
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: step %d, layer %d: %v", rp.name, g.step, g.layer, shapeErr(err))
	}
	rt, err := moe.FromTrace(s, rp.ids, g.recs)
	if err != nil {
		var te *moe.TraceError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s: topk_idx[%d,%d]: %s", rp.where(g.at[te.Record], g.step, g.layer, te.Rank), te.Token, te.Slot, te.Msg)
		}
		return nil, fmt.Errorf("%s: step %d, layer %d: %v", rp.name, g.step, g.layer, err)
	}
	tr := rt.Traffic()
	var gc moe.GroupCheck
	if rp.limit.On() {
		if gc, err = rt.CheckGroups(rp.limit); err != nil {
			return nil, fmt.Errorf("%s: step %d, layer %d: %v", rp.name, g.step, g.layer, err)
		}
	}
	total := 0
	for _, n := range per {
		total += n
	}
	gr := &groupResult{step: g.step, layer: g.layer, shape: s, tokens: total, traffic: tr, rankLoad: tr.RankLoad(), expertLoad: tr.ExpertLoad(), groups: gc}
	c := config{shape: s, mode: rp.mode, nvlink: rp.nvlink, qps: rp.qps, bg: rp.bg, bgName: rp.bgName}
	for _, p := range rp.presets {
		res, err := runOne(&rp.lf, c, rt, rp.prof, p)
		if err != nil {
			if errors.Is(err, moe.ErrQueueDepth) {
				msg, _, _ := strings.Cut(message(err), "; lower --tokens")
				return nil, fmt.Errorf("%w: %s: step %d, layer %d puts %d tokens on its busiest rank: %s; replay with --mode normal or on more --ranks",
					errUsage, rp.name, g.step, g.layer, s.Tokens, msg)
			}
			return nil, fmt.Errorf("%s: step %d, layer %d: %w", rp.name, g.step, g.layer, err)
		}
		gr.runs = append(gr.runs, presetRun{p, res})
	}
	return gr, nil
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
		fmt.Sprintf("layer: workload %s (hidden %d, %s dispatch, %s combine), EP%d = %d nodes × %d GPUs, %s mode, NVLink %s; tokens per rank: the busiest rank's in each (step, layer)",
			rp.wl, s.Hidden, s.Dispatch, s.Combine, s.Ranks, s.Nodes(), s.GPUsPerNode, rp.mode, nv),
		fmt.Sprintf("source ranks: as recorded; records without a rank are split evenly over the %d ranks", s.Ranks),
		fmt.Sprintf("background %s", rp.bg),
		"group limit: "+rp.limitBy,
	)
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

// replayAgg accumulates over every replayed group in memory bounded by
// the ranks, experts and presets, never by the trace's length.
type replayAgg struct {
	shape      moe.Shape
	mode       moe.Mode
	nvlink     bool
	groups     int
	tokens     int64
	selections int64
	perRank    []int64 // selections received over the trace
	perExpert  []int64
	locality   [3]int64
	rankImb    layerStats
	expertImb  layerStats
	worstRank  [2]int // (step, layer) of the worst rank imbalance
	worstExp   [2]int
	glimit     moe.GroupCheck
	presets    []presetAgg
}

type presetAgg struct {
	preset  preset.Preset
	correct bool
	phase   [2]phaseAgg // dispatch, combine
}

type phaseAgg struct {
	layer     layerStats // the slowest rank's time per layer
	rankMean  float64    // sums over layers
	issue     float64
	breakdown moe.Breakdown
	slowBreak moe.Breakdown // the slowest rank's critical path, summed over layers
	slowest   []int         // per rank: layers in which it was the slowest
}

func newReplayAgg(s moe.Shape, ps []preset.Preset) *replayAgg {
	a := &replayAgg{shape: s, perRank: make([]int64, s.Ranks), perExpert: make([]int64, s.Physical())}
	for _, p := range ps {
		pa := presetAgg{preset: p, correct: true}
		for i := range pa.phase {
			pa.phase[i].slowest = make([]int, s.Ranks)
		}
		a.presets = append(a.presets, pa)
	}
	return a
}

func (a *replayAgg) add(g *groupResult) {
	a.groups++
	for r, n := range g.traffic.PerRank {
		a.perRank[r] += n
		a.selections += n
	}
	for e, n := range g.traffic.PerExpert {
		a.perExpert[e] += n
	}
	for i, n := range g.traffic.ByLocality {
		a.locality[i] += n
	}
	a.tokens += int64(g.tokens)
	a.glimit.Add(g.groups)
	if g.rankLoad.Imbalance > a.rankImb.max || a.rankImb.n == 0 {
		a.worstRank = [2]int{g.step, g.layer}
	}
	if g.expertLoad.Imbalance > a.expertImb.max || a.expertImb.n == 0 {
		a.worstExp = [2]int{g.step, g.layer}
	}
	a.rankImb.add(g.rankLoad.Imbalance)
	a.expertImb.add(g.expertLoad.Imbalance)
	for i, run := range g.runs {
		pa := &a.presets[i]
		pa.correct = pa.correct && run.res.Correct
		for j, ph := range phases(run.res) {
			p, acc := ph.p, &pa.phase[j]
			acc.layer.add(p.Time.Max)
			acc.rankMean += p.Time.Mean
			acc.issue += p.IssueDone.Max
			for c, v := range p.Breakdown {
				acc.breakdown[c] += v
			}
			if r := slowestRank(p); r >= 0 {
				acc.slowest[r]++
				for c, v := range p.Ranks[r].Breakdown {
					acc.slowBreak[c] += v
				}
			}
		}
	}
}

// slowestRank is the rank whose phase ended last (the lowest on ties), or
// −1 when the phase has no ranks.
func slowestRank(p *moe.Phase) int {
	best := -1
	for r, t := range p.Ranks {
		if best < 0 || t.Ready > p.Ranks[best].Ready {
			best = r
		}
	}
	return best
}

// rankCount is how many layers a rank was the slowest in.
type rankCount struct {
	Rank   int `json:"rank"`
	Layers int `json:"layers"`
}

// slowestRanks lists the ranks that were ever the slowest, most often
// first.
func (p *phaseAgg) slowestRanks() []rankCount {
	var out []rankCount
	for r, n := range p.slowest {
		if n > 0 {
			out = append(out, rankCount{r, n})
		}
	}
	slices.SortStableFunc(out, func(a, b rankCount) int { return b.Layers - a.Layers })
	return out
}

// meanBreakdown is the breakdown averaged over layers.
func (p *phaseAgg) meanBreakdown(n int) moe.Breakdown { return divide(p.breakdown, n) }

// slowestBreakdown is the slowest rank's critical path averaged over
// layers.
func (p *phaseAgg) slowestBreakdown(n int) moe.Breakdown { return divide(p.slowBreak, n) }

func divide(sum moe.Breakdown, n int) moe.Breakdown {
	var b moe.Breakdown
	for c, v := range sum {
		b[c] = v / float64(max(n, 1))
	}
	return b
}

// exactSamples is how many per-layer values layerStats keeps exactly;
// past that it folds them into log buckets, so memory stays bounded.
const exactSamples = 1024

// bucketGrowth is the width of a log bucket: percentiles past
// exactSamples values are good to 0.1%, the three significant digits the
// tables print.
const bucketGrowth = 1.001

// layerStats summarizes a stream of per-layer values in bounded memory:
// count, sum, minimum and maximum exactly; percentiles exactly (linear
// interpolation, as moe.Summarize) up to exactSamples values, then from
// log buckets 0.1% wide.
type layerStats struct {
	n        int
	sum      float64
	min, max float64
	exact    []float64
	buckets  map[int32]int64
}

func (s *layerStats) add(v float64) {
	if s.n == 0 || v < s.min {
		s.min = v
	}
	if s.n == 0 || v > s.max {
		s.max = v
	}
	s.n++
	s.sum += v
	if s.buckets == nil && len(s.exact) < exactSamples {
		s.exact = append(s.exact, v)
		return
	}
	if s.buckets == nil {
		s.buckets = map[int32]int64{}
		for _, x := range s.exact {
			s.buckets[bucketOf(x)]++
		}
		s.exact = nil
	}
	s.buckets[bucketOf(v)]++
}

func bucketOf(v float64) int32 {
	if v <= 0 {
		return math.MinInt32
	}
	return int32(math.Floor(math.Log(v) / math.Log(bucketGrowth)))
}

func (s *layerStats) mean() float64 {
	if s.n == 0 {
		return 0
	}
	return s.sum / float64(s.n)
}

func (s *layerStats) summary() moe.Summary {
	if s.n == 0 {
		return moe.Summary{}
	}
	if s.buckets == nil {
		sum := moe.Summarize(s.exact)
		sum.Mean = s.mean()
		return sum
	}
	return moe.Summary{Mean: s.mean(), Min: s.min, Max: s.max, P50: s.quantile(50), P99: s.quantile(99)}
}

// quantile is the nearest-rank percentile from the buckets: the geometric
// middle of the bucket holding it, clamped to the observed range.
func (s *layerStats) quantile(p float64) float64 {
	keys := make([]int32, 0, len(s.buckets))
	for k := range s.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := int64(math.Ceil(p / 100 * float64(s.n)))
	want = max(want, 1)
	var seen int64
	for _, k := range keys {
		seen += s.buckets[k]
		if seen >= want {
			if k == math.MinInt32 {
				return max(s.min, 0)
			}
			v := math.Pow(bucketGrowth, float64(k)+0.5)
			return min(max(v, s.min), s.max)
		}
	}
	return s.max
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
