package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/profile"
	"moebench/transport/preset"
)

// nativeFlags choose the engine and the native engine's knobs.
type nativeFlags struct {
	engine  string
	gpus    []int
	vranks  []int
	nicSMs  int
	bgSMs   int
	warmup  int
	reps    int
	flushL2 bool
	verify  bool
	pace    bool
	lib     string
	ncclLib string
	timeout time.Duration
}

func (n *nativeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&n.engine, "engine", "model", "model (the discrete-event model, any machine) or native (the layer's kernels on this host's GPUs; make native first)")
	fs.IntSliceVar(&n.gpus, "gpus", nil, "native: GPUs, one rank on each (with --virtual-ranks: that many ranks on each)")
	fs.IntSliceVar(&n.vranks, "virtual-ranks", nil, "native: ranks sharing one GPU, each with its own SMs and buffers")
	fs.IntVar(&n.nicSMs, "nic-sms", nativelayer.DefaultNICSMs, "native: SMs per GPU running the emulated NIC")
	fs.IntVar(&n.bgSMs, "bg-sms", nativelayer.DefaultBgSMs, "native: SMs per GPU posting --background traffic")
	fs.IntVar(&n.warmup, "warmup", nativelayer.DefaultWarmup, "native: untimed repetitions first")
	fs.IntVar(&n.reps, "reps", nativelayer.DefaultReps, "native: timed repetitions (each dispatch, then combine)")
	fs.BoolVar(&n.flushL2, "flush-l2", true, "native: overwrite the L2 before every launch, as DeepEP's benchmark does")
	fs.BoolVar(&n.verify, "verify", true, "native: check every token of every repetition")
	fs.BoolVar(&n.pace, "nic-pace", false, "native: pace the emulated NIC to the profile's line and message rates per rank")
	fs.StringVar(&n.lib, "lib", "", "native: path to libmoebench_native.so (default $"+native.LibEnv+" or native/build/)")
	fs.StringVar(&n.ncclLib, "nccl-lib", "", "native: NCCL's library for --transport nccl-a2a (default $"+ncclLibEnv+" or libnccl.so.2 on the loader's path)")
	fs.DurationVar(&n.timeout, "timeout", nativelayer.DefaultTimeout, "native: longest any GPU or CPU wait may take before the run fails")
}

// openNativeLib opens the library; tests replace it with a fake.
var openNativeLib = func(path string) (nativelayer.Runner, error) { return native.Open(path) }

// nativeItem is one native run with the model's prediction beside it.
type nativeItem struct {
	cfg   config
	knobs []knob
	tr    nativelayer.Transport
	m     *nativelayer.Measurement
	model *moe.Result
	err   error // a failed check: the run is reported, the command fails
}

// nativeTransports splits --transport/--preset into presets and the
// direct path (native only). With --preset alone, --transport's default
// (all) adds nothing. The emulated NIC runs every mechanism's GPU side
// whatever the profile's adapters, so "all" takes every mechanism (no
// profile filters it).
func nativeTransports(f *layerFlags, byName, transportGiven bool) ([]preset.Preset, bool, bool, error) {
	var rest []string
	direct, nccl := false, false
	if byName && !transportGiven {
		ps, err := resolvePresets(nil, f.presets, true, nil)
		return ps, false, false, err
	}
	for _, t := range splitList(f.transports) {
		switch t {
		case nativelayer.NCCLName:
			nccl = true
		case "direct":
			direct = true
		case "all":
			direct = true
			rest = append(rest, t)
		default:
			rest = append(rest, t)
		}
	}
	if byName || len(rest) > 0 {
		ps, err := resolvePresets(rest, f.presets, byName, nil)
		return ps, direct, nccl, err
	}
	return nil, direct, nccl, nil
}

// nativeConfigs sets the ranks of every configuration from --gpus and
// --virtual-ranks and rejects the flags the native engine does not use.
func nativeConfigs(f *layerFlags, fs *pflag.FlagSet, configs []config) ([]config, error) {
	n := &f.native
	for _, fl := range []string{"gpus-per-node", "nvlink"} {
		if fs.Changed(fl) {
			return nil, fmt.Errorf("%w: --%s: not used by the native engine (ranks run on this host's GPUs; the direct path is --transport direct)", errUsage, fl)
		}
	}
	if len(n.gpus) == 0 && len(n.vranks) == 0 {
		return nil, fmt.Errorf("%w: --engine native: give --gpus N (one rank per GPU) or --virtual-ranks R (R ranks sharing one GPU)", errUsage)
	}
	gpus, vr := n.gpus, n.vranks
	if len(gpus) == 0 {
		gpus = []int{1}
	}
	if len(vr) == 0 {
		vr = []int{1}
	}
	for _, v := range slices.Concat(gpus, vr) {
		if v < 1 {
			return nil, fmt.Errorf("%w: --gpus and --virtual-ranks take values of at least 1 (got %d)", errUsage, v)
		}
	}
	switch {
	case n.warmup < 0:
		return nil, fmt.Errorf("%w: --warmup %d: must be 0 or more", errUsage, n.warmup)
	case n.reps < 1:
		return nil, fmt.Errorf("%w: --reps %d: must be at least 1", errUsage, n.reps)
	case n.nicSMs < 1:
		return nil, fmt.Errorf("%w: --nic-sms %d: the emulated NIC needs at least one SM", errUsage, n.nicSMs)
	case n.bgSMs < 1:
		return nil, fmt.Errorf("%w: --bg-sms %d: must be at least 1", errUsage, n.bgSMs)
	case n.timeout < 10*time.Millisecond || n.timeout > time.Hour:
		return nil, fmt.Errorf("%w: --timeout %v: want 10ms to 1h", errUsage, n.timeout)
	}
	// The native library takes its counts as 32-bit integers.
	for _, c := range []struct {
		flag string
		v    int
	}{{"warmup", n.warmup}, {"reps", n.reps}, {"nic-sms", n.nicSMs}, {"bg-sms", n.bgSMs}} {
		if c.v > math.MaxInt32 {
			return nil, fmt.Errorf("%w: --%s %d: more than the %d the native library counts (32 bits)", errUsage, c.flag, c.v, math.MaxInt32)
		}
	}
	var out []config
	for _, c := range configs {
		if c.mode != moe.LL && c.mode != moe.Normal {
			return nil, fmt.Errorf("%w: --mode %s: the native engine runs ll and normal mode", errUsage, c.mode)
		}
		// Refused here, before the library loads: its kernels cast to FP8
		// or copy BF16, and would run another message size than asked.
		if d := c.shape.Dispatch; d != moe.FP8 && d != moe.BF16 {
			return nil, fmt.Errorf("%w: --dispatch-dtype %s: the native engine's kernels dispatch fp8 or bf16 (the model runs %s with --engine model)", errUsage, d, d)
		}
		if d := c.shape.Combine; d != moe.BF16 {
			return nil, fmt.Errorf("%w: --combine-dtype %s: the native engine's kernels combine in bf16", errUsage, d)
		}
		if fs.Changed("chunk") && c.mode != moe.Normal {
			return nil, fmt.Errorf("%w: --chunk: the native engine chunks normal mode only (--mode normal)", errUsage)
		}
		for _, g := range gpus {
			for _, v := range vr {
				c2 := c
				c2.shape.Ranks, c2.shape.GPUsPerNode = g*v, 1
				c2.gpus = g
				if fs.Changed("ranks") && c.shape.Ranks != g*v {
					return nil, fmt.Errorf("%w: --ranks %d: the native engine runs --gpus × --virtual-ranks = %d ranks", errUsage, c.shape.Ranks, g*v)
				}
				if err := c2.shape.Validate(); err != nil {
					return nil, fmt.Errorf("%w: %w (%d GPUs × %d virtual ranks)", errUsage, err, g, v)
				}
				out = append(out, c2)
			}
		}
	}
	return out, nil
}

// runNativeLayer is run and sweep on the native engine: each
// configuration and transport measured on the GPUs, the model's
// prediction beside it.
func runNativeLayer(name string, f *layerFlags, fs *pflag.FlagSet, base *profile.Profile, axes []setAxis, configs []config, spec moe.RoutingSpec, stdout, stderr io.Writer) error {
	configs, err := nativeConfigs(f, fs, configs)
	if err != nil {
		return err
	}
	trs, nccl, err := nativeLayerPaths(f, fs, configs)
	if err != nil {
		return err
	}
	lib, err := openNativeLib(f.native.lib)
	if err != nil {
		return fmt.Errorf("--engine native: %w", err)
	}
	dev := lib.Device()
	bar := report.NewProgress(stderr, "moebench "+name+" (native)", len(configs)*len(trs), report.ProgressOptions{Force: f.progress})
	routes := map[moe.Shape]*moe.Routing{}
	var items []nativeItem
	var ncclItems []ncclItem
	failed := 0
	for _, c := range configs {
		rt, prof, err := configInputs(c, routes, spec, f.seed, base)
		if err != nil {
			return err
		}
		o := nativeOptions(f, c, prof)
		for _, tr := range trs {
			tr.Options = preset.OptionsOf(c.knobs)
			it, err := measureNative(lib, f, rt, tr, o, c, prof)
			if err != nil {
				return err
			}
			if it.err != nil {
				failed++
			}
			it.knobs = nativeKnobs(fs, axes, c)
			items = append(items, it)
			bar.Step(tr.Name())
		}
		if nccl {
			st, err := nativelayer.RunNCCL(lib, rt, o, ncclLib(f.native.ncclLib))
			if err != nil {
				if errors.Is(err, nativelayer.ErrPlan) || errors.Is(err, native.ErrBadArgument) {
					return fmt.Errorf("%w: %w", errUsage, err)
				}
				return err
			}
			ncclItems = append(ncclItems, ncclItem{cfg: c, knobs: nativeKnobs(fs, axes, c), st: st})
		}
	}
	bar.Done()
	h := header(name, base, fmt.Sprintf("measured on %s (driver %s, CUDA %s) by the native engine; model columns modelled on the profile with the emulated NIC's constants",
		dev.Name, dev.Driver, native.CUDAVersion(dev.CUDARuntime)))
	h.Seed = &f.seed
	h.Extra = describeNative(f, configs, spec, items)
	if c, ok := base.Constant("emunic.wqe_ns"); ok && strings.HasPrefix(c.Source, "model assumption") {
		// Without a layer calibration the model columns rest on guesses
		// for the emulated NIC; say how to replace them.
		h.Extra = append(h.Extra, "the emulated NIC's constants are assumptions: fit them with moebench calibrate --layer (an H200's fit: --profile p-ib,native/testdata/h200-calibration.json,native/testdata/h200-layer.json)")
	}
	// A run that failed its checks fails the command: the table still
	// goes to stdout, to show which, but no --out file is written.
	f.out.hold()
	defer f.out.discard()
	if err := f.out.emit(stdout, func(w io.Writer) error { return renderNative(w, f.out.format, h, items, ncclItems) }); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("native engine: %d of %d runs failed their checks (see the problems above)%s", failed, len(items), notWritten(f.out.outs))
	}
	return f.out.commit()
}

// nativeLayerPaths is what the native engine runs each configuration
// through: the presets' layer paths, the direct path, and whether NCCL's
// all-to-all runs beside them (one rank per GPU only).
func nativeLayerPaths(f *layerFlags, fs *pflag.FlagSet, configs []config) ([]nativelayer.Transport, bool, error) {
	presets, direct, nccl, err := nativeTransports(f, fs.Changed("preset"), fs.Changed("transport"))
	if err != nil {
		return nil, false, err
	}
	if nccl {
		for _, c := range configs {
			if c.gpus != c.shape.Ranks {
				return nil, false, fmt.Errorf("%w: --transport %s: NCCL runs one rank per GPU, not %d on each (use --gpus N without --virtual-ranks)", errUsage, nativelayer.NCCLName, c.shape.Ranks/max(1, c.gpus))
			}
		}
	}
	var trs []nativelayer.Transport
	for _, p := range presets {
		trs = append(trs, nativelayer.Transport{Preset: p})
	}
	if direct {
		trs = append(trs, nativelayer.Transport{Direct: true})
	}
	if len(trs) == 0 {
		if nccl {
			return nil, false, fmt.Errorf("%w: --transport %s is a baseline beside the layer: name a layer path too (e.g. --transport direct,%s)", errUsage, nativelayer.NCCLName, nativelayer.NCCLName)
		}
		return nil, false, fmt.Errorf("%w: --transport: no transport given", errUsage)
	}
	return trs, nccl, nil
}

// nativeOptions are configuration c's native run options, pacing the
// emulated NIC at prof's line and message rate when asked.
func nativeOptions(f *layerFlags, c config, prof *profile.Profile) nativelayer.Options {
	o := nativelayer.Options{GPUs: c.gpus, SMsPerRank: f.numSMs, NICSMs: f.native.nicSMs, BgSMs: f.native.bgSMs,
		Warmup: f.native.warmup, Reps: f.native.reps, FlushL2: f.native.flushL2, NoVerify: !f.native.verify,
		Timeout: f.native.timeout, Pace: f.native.pace, Mode: c.mode, Chunk: f.chunk}
	if o.Pace {
		o.LineGBs = prof.Get("link.gbps") * prof.Get("link.efficiency") / 8
		o.MsgMps = prof.Get("nic.msg_rate_mps")
	}
	return o
}

// measureNative runs one configuration through one path and the model of
// the same run beside it. A run that failed its checks is an item with
// its error (the table shows it); one the library refuses is a usage
// error.
func measureNative(lib nativelayer.Runner, f *layerFlags, rt *moe.Routing, tr nativelayer.Transport, o nativelayer.Options, c config, prof *profile.Profile) (nativeItem, error) {
	m, err := nativelayer.Run(lib, rt, tr, o, c.bg)
	var checkErr error
	switch {
	case errors.Is(err, nativelayer.ErrPlan) || errors.Is(err, native.ErrBadArgument):
		return nativeItem{}, fmt.Errorf("%w: %s: %w", errUsage, tr.Name(), err)
	case errors.Is(err, native.ErrCheck) && m != nil:
		checkErr = err
	case err != nil:
		return nativeItem{}, err
	}
	pred, err := nativelayer.Predict(rt, m.Config, m.Result.Workers, tr, prof, c.bg, f.log)
	if err != nil {
		return nativeItem{}, fmt.Errorf("%s: the model of the native run: %w", tr.Name(), err)
	}
	return nativeItem{cfg: c, tr: tr, m: m, model: pred, err: checkErr}, nil
}

// nativeKnobs are the model's swept knobs plus the native placement's.
func nativeKnobs(fs *pflag.FlagSet, axes []setAxis, c config) []knob {
	k := knobsOf(fs, axes, c)
	multi := func(name string) bool {
		v := fs.Lookup(name)
		return v != nil && v.Changed && strings.Contains(v.Value.String(), ",")
	}
	if multi("gpus") || multi("virtual-ranks") {
		k = append([]knob{{"ranks", strconv.Itoa(c.shape.Ranks)}, {"GPUs", strconv.Itoa(c.gpus)}}, k...)
	}
	return k
}

func describeNative(f *layerFlags, configs []config, spec moe.RoutingSpec, items []nativeItem) []string {
	s := configs[0].shape
	l := []string{
		fmt.Sprintf("workload %s: %d experts, top-%d, hidden %d, %d tokens/rank, %d ranks, %s dispatch, %s mode",
			f.workload, s.Physical(), s.TopK, s.Hidden, s.Tokens, s.Ranks, s.Dispatch, configs[0].mode),
		fmt.Sprintf("routing %s; background %s", spec, configs[0].bg),
	}
	if len(items) > 0 {
		m := items[0].m
		l = append(l, fmt.Sprintf("%s; %d warm-up and %d timed repetitions, L2 flushed %v, every token checked %v",
			placement(m), m.Config.Warmup, m.Config.Reps, m.Config.FlushL2, m.Config.Verify))
		if c := m.Config; c.Normal {
			l = append(l, fmt.Sprintf("normal mode as DeepEP's intranode kernels: %d channels (a sender and a receiver SM each), %d-token ring buffers per channel and peer, a tail every %d tokens; the count exchange runs inside the dispatch kernel (DeepEP's separate notify kernel and host wait are not measured)",
				c.SMsPerRank/2, c.BufTokens, c.Chunk))
		}
	}
	if len(configs) > 1 {
		l = append(l, fmt.Sprintf("sweep: %d configurations (first shown above)", len(configs)))
	}
	return l
}

// placement says where the ranks ran.
func placement(m *nativelayer.Measurement) string {
	c := m.Config
	rd := c.Ranks / max(1, c.GPUs)
	where := report.Count(c.Ranks, "rank") + " on " + report.Count(c.GPUs, "GPU")
	if rd > 1 && c.GPUs == 1 {
		where = fmt.Sprintf("%d virtual ranks on 1 GPU", c.Ranks)
	} else if rd > 1 {
		where = fmt.Sprintf("%d GPUs × %d virtual ranks", c.GPUs, rd)
	}
	return fmt.Sprintf("%s, %d SMs each", where, c.SMsPerRank)
}

// nicText names the NIC a run used.
func nicText(m *nativelayer.Measurement) string {
	c := m.Config
	if c.Path == native.PathDirect {
		return "none (direct stores)"
	}
	pace := "unpaced"
	if c.Pace {
		pace = fmt.Sprintf("paced to %.3g GB/s and %.3g M msg/s per rank", c.LineGBs, c.MsgMps)
	}
	return fmt.Sprintf("emulated NIC on %d SMs per GPU, %s", c.NICSMs, pace)
}

func nativePhases(it nativeItem) []struct {
	name  string
	st    *nativelayer.PhaseStats
	model *moe.Phase
} {
	return []struct {
		name  string
		st    *nativelayer.PhaseStats
		model *moe.Phase
	}{{"dispatch", &it.m.Dispatch, &it.model.Dispatch}, {"combine", &it.m.Combine, &it.model.Combine}}
}

func ratio(model, measured float64) float64 {
	if measured <= 0 {
		return 0
	}
	return model / measured
}

func correctText(it nativeItem) string {
	r := it.m.Result
	switch {
	case !it.m.Config.Verify:
		return "not checked"
	case it.err != nil || r.Problems > 0:
		return fmt.Sprintf("NO (%d problems)", r.Problems)
	}
	return fmt.Sprintf("yes (%d)", r.Checked)
}

func renderNative(w io.Writer, format string, h report.Header, items []nativeItem, nccl []ncclItem) error {
	switch format {
	case "json":
		return report.WriteJSON(w, nativeJSON(h, items, nccl))
	case "csv":
		t := nativeCSV(items)
		ncclCSV(t, nccl)
		return t.WriteCSV(w, &h)
	}
	kc := func(it nativeItem) []string { return nativeKnobVals(it) }
	t := nativeWith(items, []string{"preset", "transport", "phase", "mean µs", "p50 µs", "max µs", "issue done µs", "kernel µs", "algo GB/s", "model µs", "model/measured"},
		[]bool{false, false, false, true, true, true, true, true, true, true, true})
	for _, it := range items {
		for _, ph := range nativePhases(it) {
			st := ph.st
			t.Rows = append(t.Rows, append(kc(it), it.tr.Name(), it.tr.Mechanism(), ph.name, report.Num(st.Ready.Mean), report.Num(st.Ready.P50),
				report.Num(st.Ready.Max), report.Num(st.IssueDone.Mean), report.Num(st.KernelUs), report.Num(st.AlgoGBps),
				report.Num(ph.model.Time.Mean), strconv.FormatFloat(ratio(ph.model.Time.Mean, st.Ready.Mean), 'f', 2, 64)))
		}
	}
	if err := t.WriteText(w, &h); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nMeasured timeline (µs from the launch, mean over ranks): the last post, the send side done (dispatch: its grid sync), every count or flag seen (combine: its grid sync), ready; post ns is one post's issue time:\n\n"); err != nil {
		return err
	}
	tl := nativeWith(items, []string{"preset", "phase", "issue done", "send done", "signals seen", "ready", "post ns", "posts", "copies", "model issue done"},
		[]bool{false, false, true, true, true, true, true, true, true, true})
	for _, it := range items {
		for _, ph := range nativePhases(it) {
			st := ph.st
			tl.Rows = append(tl.Rows, append(kc(it), it.tr.Name(), ph.name, report.Num(st.IssueDone.Mean), report.Num(st.SendDone.Mean),
				report.Num(st.WaitDone.Mean), report.Num(st.Ready.Mean), report.Num(st.PostNs), strconv.FormatInt(st.Posts, 10),
				strconv.FormatInt(st.Copies, 10), report.Num(ph.model.IssueDone.Max)))
		}
	}
	if err := tl.WriteText(w, nil); err != nil {
		return err
	}
	if len(items) <= 4 {
		if _, err := io.WriteString(w, "\nPer rank (µs over the repetitions):\n\n"); err != nil {
			return err
		}
		pr := nativeWith(items, []string{"preset", "phase", "rank", "avg µs", "min µs", "max µs"}, []bool{false, false, true, true, true, true})
		for _, it := range items {
			for _, ph := range nativePhases(it) {
				for r, rs := range ph.st.Ranks {
					pr.Rows = append(pr.Rows, append(kc(it), it.tr.Name(), ph.name, strconv.Itoa(r), report.Num(rs.Mean), report.Num(rs.Min), report.Num(rs.Max)))
				}
			}
		}
		if err := pr.WriteText(w, nil); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\nPlacement, emulated NIC and checks (NIC counts per repetition):\n\n"); err != nil {
		return err
	}
	nt := nativeWith(items, []string{"preset", "placement", "NIC", "queues", "WQEs", "doorbells", "torn reads", "DCI switches", "proxy workers", "buffer MiB/rank", "correct"},
		[]bool{false, false, false, true, true, true, true, true, true, true, false})
	for _, it := range items {
		r := it.m.Result
		reps := int64(max(1, it.m.Config.Reps))
		nt.Rows = append(nt.Rows, append(kc(it), it.tr.Name(), placement(it.m), nicText(it.m), strconv.Itoa(r.NICQueues),
			strconv.FormatInt(r.WQEs/reps, 10), strconv.FormatInt(r.Doorbells/reps, 10), strconv.FormatInt(r.Torn/reps, 10),
			strconv.FormatInt(r.DCISwitches/reps, 10), strconv.Itoa(r.Workers), report.Num(mib(r.BufferBytes)), correctText(it)))
	}
	if err := nt.WriteText(w, nil); err != nil {
		return err
	}
	for _, it := range items {
		if it.err != nil {
			if _, err := fmt.Fprintf(w, "! %s: %s\n", it.tr.Name(), it.m.Result.Problem); err != nil {
				return err
			}
		}
	}
	return renderNCCL(w, items, nccl)
}

// nativeWith is a table with the swept knobs' columns first.
func nativeWith(items []nativeItem, cols []string, numeric []bool) *report.Table {
	var kc []string
	if len(items) > 0 {
		for _, k := range items[0].knobs {
			kc = append(kc, k.name)
		}
	}
	t := &report.Table{Columns: append(slices.Clone(kc), cols...)}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, numeric...)
	return t
}

func nativeKnobVals(it nativeItem) []string {
	var v []string
	for _, k := range it.knobs {
		v = append(v, k.value)
	}
	return v
}

type nativeJSONPhase struct {
	jsonPhase
	SendDoneUs float64                 `json:"send_done_us"`
	WaitDoneUs float64                 `json:"signals_seen_us"`
	KernelUs   float64                 `json:"kernel_us"`
	PostNs     float64                 `json:"post_ns"`
	Copies     int64                   `json:"copies"`
	Ranks      []nativelayer.RankStats `json:"ranks"`
}

type nativeJSONResult struct {
	jsonResult
	Dispatch  nativeJSONPhase    `json:"dispatch"`
	Combine   nativeJSONPhase    `json:"combine"`
	NIC       string             `json:"nic"`
	Placement string             `json:"placement"`
	Measured  []string           `json:"measured"`
	Model     nativeModel        `json:"model"`
	Native    native.LayerResult `json:"native"`
	Config    native.LayerConfig `json:"native_config"`
	Device    native.DeviceInfo  `json:"device"`
}

type nativeModel struct {
	Profile  string    `json:"profile"`
	Dispatch jsonPhase `json:"dispatch"`
	Combine  jsonPhase `json:"combine"`
}

func nativePhaseJSON(st *nativelayer.PhaseStats) nativeJSONPhase {
	return nativeJSONPhase{
		jsonPhase: jsonPhase{MeanUs: st.Ready.Mean, MinUs: st.Ready.Min, MaxUs: st.Ready.Max, P50Us: st.Ready.P50, P99Us: st.Ready.P99,
			DeliveredUs: st.WaitDone, IssueDoneUs: st.IssueDone.Max, AlgoGBps: st.AlgoGBps, Messages: st.Posts,
			Breakdown: map[string]float64{}},
		SendDoneUs: st.SendDone.Mean, WaitDoneUs: st.WaitDone.Mean, KernelUs: st.KernelUs, PostNs: st.PostNs,
		Copies: st.Copies, Ranks: st.Ranks,
	}
}

func nativeJSON(h report.Header, items []nativeItem, nccl []ncclItem) any {
	doc := struct {
		Header  report.Header      `json:"header"`
		Results []nativeJSONResult `json:"results"`
		NCCL    []ncclJSON         `json:"nccl_all_to_all,omitempty"`
	}{Header: h, Results: []nativeJSONResult{}, NCCL: ncclJSONOf(nccl)}
	for _, it := range items {
		s, r := it.model.Shape, it.m.Result
		jr := nativeJSONResult{
			jsonResult: jsonResult{Engine: "native", Transport: it.tr.Mechanism(), Preset: it.tr.Name(), Workload: workloadOf(h), Mode: it.cfg.mode.String(),
				Ranks: s.Ranks, GPUsPerNode: s.GPUsPerNode, Tokens: s.Tokens, Experts: s.Physical(), TopK: s.TopK, Hidden: s.Hidden,
				NVLink: it.tr.Direct, NumSMs: it.m.Config.SMsPerRank, QPsPerPeer: it.cfg.knobs.Int("qps-per-peer"), Background: it.cfg.bgName, Sets: it.cfg.sets,
				Resources: moe.Resources{BufferBytesPerRank: r.BufferBytes}, RouteHash: it.model.RouteHash,
				Correct: it.err == nil && r.Problems == 0, Events: 0, DispatchDType: s.Dispatch.String(), CombineDType: s.Combine.String()},
			Dispatch: nativePhaseJSON(&it.m.Dispatch), Combine: nativePhaseJSON(&it.m.Combine),
			NIC: nicText(it.m), Placement: placement(it.m),
			Measured: []string{"mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "send_done_us", "signals_seen_us", "kernel_us", "post_ns", "algo_gbps", "ranks"},
			Model:    nativeModel{Profile: it.model.Transport, Dispatch: toJSONPhase(&it.model.Dispatch), Combine: toJSONPhase(&it.model.Combine)},
			Native:   r, Config: it.m.Config, Device: it.m.Device,
		}
		if r.Problem != "" {
			jr.Problems = []string{r.Problem}
		}
		if len(it.knobs) > 0 {
			jr.Knobs = map[string]string{}
			for _, k := range it.knobs {
				jr.Knobs[k.name] = k.value
			}
		}
		doc.Results = append(doc.Results, jr)
	}
	return doc
}

func nativeCSV(items []nativeItem) *report.Table {
	cols := []string{"engine", "mode", "preset", "transport", "ranks", "gpus", "sms_per_rank", "nic_sms", "tokens", "experts", "topk", "hidden", "background", "sets",
		"phase", "mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "send_done_us", "signals_seen_us", "kernel_us", "post_ns", "algo_gbps",
		"model_mean_us", "model_issue_done_us", "model_over_measured", "wqes", "doorbells", "torn_reads", "dci_switches", "route_hash", "correct"}
	t := &report.Table{Columns: cols}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, it := range items {
		s, r, c := it.model.Shape, it.m.Result, it.m.Config
		for _, ph := range nativePhases(it) {
			st := ph.st
			t.Rows = append(t.Rows, []string{"native", it.cfg.mode.String(), it.tr.Name(), it.tr.Mechanism(), strconv.Itoa(s.Ranks), strconv.Itoa(c.GPUs), strconv.Itoa(c.SMsPerRank),
				strconv.Itoa(c.NICSMs), strconv.Itoa(s.Tokens), strconv.Itoa(s.Physical()), strconv.Itoa(s.TopK), strconv.Itoa(s.Hidden),
				it.cfg.bgName, strings.Join(it.cfg.sets, ";"), ph.name,
				f(st.Ready.Mean), f(st.Ready.Min), f(st.Ready.Max), f(st.Ready.P50), f(st.Ready.P99), f(st.IssueDone.Mean), f(st.SendDone.Mean),
				f(st.WaitDone.Mean), f(st.KernelUs), f(st.PostNs), f(st.AlgoGBps), f(ph.model.Time.Mean), f(ph.model.IssueDone.Max),
				f(ratio(ph.model.Time.Mean, st.Ready.Mean)), strconv.FormatInt(r.WQEs, 10), strconv.FormatInt(r.Doorbells, 10),
				strconv.FormatInt(r.Torn, 10), strconv.FormatInt(r.DCISwitches, 10), it.model.RouteHash,
				strconv.FormatBool(it.err == nil && r.Problems == 0)})
		}
	}
	return t
}
