package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"moebench/internal/inputfile"
	"moebench/internal/report"
	"moebench/microbench"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/transport/gda"
	"moebench/transport/proxy"
)

const calibrateUsage = `Usage: moebench calibrate [flags]

Measure the GPU side of GPU-initiated RDMA submission on the local GPU with
the native library (build it with 'make native' on a CUDA host) and write a
profile fragment of the measured constants.

It builds real mlx5 RDMA-write WQEs on the GPU (and checks them field by
field), times one thread's issue for every doorbell ordering with the
doorbell on a host-mapped page and in device memory, does the same for
EFA's SRD WQEs posted as EFA DP Direct posts them (a 64 B WQE and a 32-bit
producer-counter doorbell, checked byte for byte), sweeps the inline
payload, measures posting rates, the CPU-proxy enqueue, handoff round trip
and worker capacity, and what carrying the path costs a caller kernel. A
full run takes well under a minute.

With --layer it runs the native layer instead over a grid (2, 4 and 8
virtual ranks x 16 and 128 tokens x direct, mini-gda, mini-proxy and dc;
hidden, top-k and SMs varied at 4 ranks), fits the model's kernel-side
constants, the GPU's copy rates and the emulated NIC's costs to it, each
within bounds from physics or the GPU's datasheet (H100, H800, H200), and
prints the model beside every measured phase, which constants sit on a
bound, and each configuration's error when the fit leaves it out. About
20 s of runs on an H200, then a few minutes of fitting on a few cores.

Examples:
  moebench calibrate --lib native/build/libmoebench_native.so
  moebench calibrate --layer --base p-ib,h200.json --out h200-layer.json   # the layer kernels and the emulated NIC
  moebench calibrate --layer --from-raw h200-layer-raw.json --base p-ib,h200.json
  moebench calibrate --layer --grid normal --raw normal-raw.json   # normal mode's runs only
  moebench calibrate --layer --from-raw ll-raw.json,normal-raw.json --base p-ib,h200.json   # refit both
  moebench calibrate --out h200.json --raw h200-raw.json
  moebench mech --profile p-ib,h200.json ...   # run the model on the result
  moebench calibrate --format json --quick

Flags:
`

type calibrateOptions struct {
	out, raw, base, lib, format, fromRaw, grid string
	iters                                      int
	quick, layer, compute                      bool
	baseSet                                    bool // --base given
}

// register adds calibrate's flags to fs.
func (o *calibrateOptions) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.out, "out", "calibration.json", "profile fragment to write")
	fs.StringVar(&o.raw, "raw", "", "also write the raw measurements (JSON) to this file")
	fs.StringVar(&o.base, "base", "p-ib", "base profile: supplies what the measurements do not (and labels the comparison); with --compute, default the measured GPU's platform (its datasheet peaks)")
	fs.StringVar(&o.lib, "lib", "", "path to libmoebench_native.so (default $"+native.LibEnv+" or native/build/)")
	fs.StringVar(&o.format, "format", "table", "output format: table or json")
	fs.IntVar(&o.iters, "iters", 1000, "timed operations per single-thread measurement (at most 3900)")
	fs.BoolVar(&o.quick, "quick", false, "a reduced sweep, for smoke tests")
	fs.StringVar(&o.fromRaw, "from-raw", "", "refit from raw measurements saved by an earlier --raw (no GPU needed); with --layer, several files comma-separated, measured on one GPU")
	fs.StringVar(&o.grid, "grid", "all", "with --layer: the runs to measure: ll (the low-latency grid), normal (normal mode's), gpus (one rank per GPU across NVLink, on a host of several), transfer (the low-latency grid, then one rank on the whole GPU and an SM sweep of it) or all")
	fs.BoolVar(&o.layer, "layer", false, "calibrate the layer kernels' own costs and the emulated NIC from native layer runs over a grid (ranks, tokens, hidden, top-k, SMs, transport)")
	fs.BoolVar(&o.compute, "compute", false, "calibrate the expert GEMMs: cuBLASLt's grouped GEMMs at DeepSeek-V3's expert shape for 1 to 4,096 tokens an expert, FP8 and BF16, alone and beside a normal-mode dispatch")
}

func runCalibrate(args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("calibrate", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o calibrateOptions
	o.register(fs)
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: calibrate: %v (moebench calibrate --help)", errUsage, err)
	}
	if *help {
		io.WriteString(stdout, calibrateUsage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: calibrate takes no arguments, got %s", errUsage, quoteArgs(fs.Args()))
	}
	if o.format != "table" && o.format != "json" {
		return fmt.Errorf("%w: --format %s: want table or json", errUsage, report.Quote(o.format))
	}
	if o.iters < 10 || o.iters > 3900 {
		return fmt.Errorf("%w: --iters %d: want 10..3900", errUsage, o.iters)
	}
	if o.layer && o.compute {
		return fmt.Errorf("%w: --layer and --compute: calibrate one at a time", errUsage)
	}
	if o.layer && !fs.Changed("out") {
		o.out = "layer-calibration.json"
	}
	if o.compute && !fs.Changed("out") {
		o.out = "compute-calibration.json"
	}
	o.baseSet = fs.Changed("base")
	for _, f := range o.outputs() {
		if f.path == "-" {
			return fmt.Errorf("%w: %s -: calibrate writes a file there (a profile fragment, raw JSON), not stdout; name one", errUsage, f.name)
		}
	}
	if err := checkOut("--out", o.out); err != nil {
		return err
	}
	if err := checkOut("--raw", o.raw); err != nil {
		return err
	}
	if err := checkFiles(o.outputs(), append(listArgs("--from-raw", o.fromRaw), append(profileArgs("--base", o.base), fileArg{"--lib", o.lib})...)); err != nil {
		return err
	}
	if fs.Changed("grid") && !o.layer {
		return fmt.Errorf("%w: --grid: only with --layer", errUsage)
	}
	if o.layer {
		return calibrateLayer(o, stdout, stderr)
	}
	if o.compute {
		return calibrateCompute(o, stdout, stderr)
	}
	var base *profile.Profile
	if o.base != "" {
		b, err := profile.Load(o.base)
		if err != nil {
			return profileErr("--base", err)
		}
		if err := checkFiles(o.outputs(), originArgs("--base", b)); err != nil {
			return err
		}
		base = b
	}
	if o.fromRaw != "" {
		data, err := readMeasured("--from-raw", o.fromRaw)
		if err != nil {
			return err
		}
		var m gda.Measured
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("--from-raw %s: %w", o.fromRaw, inputfile.JSONError("", data, err))
		}
		return finishCalibration(m, base, o, stdout)
	}
	lib, err := native.Open(o.lib)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	defer lib.Close()
	progress := func(s string) { fmt.Fprintln(stderr, "calibrate:", s) }
	m, err := calib.Measure(lib, calib.Options{Iters: o.iters, Quick: o.quick}, progress)
	if err != nil {
		return err
	}
	return finishCalibration(m, base, o, stdout)
}

// finishCalibration fits, writes the files and renders the result.
func finishCalibration(m gda.Measured, base *profile.Profile, o calibrateOptions, stdout io.Writer) error {
	consts, err := gda.FitGPU(m, base)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if base != nil {
		// The direct inversions ignore how the model composes a sequence;
		// refine the composed costs by running the model against the
		// measured issue times.
		consts, _, _, err = gda.Refine(m, base, consts)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
	}
	frag := profile.File{
		Name:        "calibration",
		Description: fmt.Sprintf("GPU constants measured by moebench calibrate on %s (driver %s, CUDA %s) at %.0f MHz; combine after a full profile, e.g. p-ib,%s", m.GPU, m.Driver, m.CUDA, m.ClockMHz, o.out),
		Constants:   consts,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	frag.Measured = raw
	var files outputFlags
	files.hold() // the fragment and the raw file, both or neither
	defer files.discard()
	if err := files.write(o.out, func(w io.Writer) error { return profile.WriteFragment(w, frag) }); err != nil {
		return fmt.Errorf("calibrate: --out: %w", err)
	}
	if o.raw != "" {
		if err := files.write(o.raw, func(w io.Writer) error { return writeJSON(w, m) }); err != nil {
			return fmt.Errorf("calibrate: --raw: %w", err)
		}
	}
	if err := files.commit(); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if o.format == "json" {
		return writeJSON(stdout, struct {
			Measured  gda.Measured       `json:"measured"`
			Constants []profile.Constant `json:"constants"`
		}{m, consts})
	}
	return writeCalibrationTable(stdout, m, consts, o)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// paperIssueNs is Table 4's P-IB issue time of an ordering mode, ns.
func paperIssueNs(mode string) float64 {
	o, _ := gda.ParseOrdering(mode)
	return 1000 * microbench.Table4(false)[o].Issue
}

// paperProxyNs is Table 3's P-IB enqueue (issue) and round trip of a
// handoff variant, ns, cold as the paper measures them.
func paperProxyNs(variant string) (enqueue, rtt float64) {
	h, _ := proxy.ParseHandoff(variant)
	for _, c := range microbench.Table3Proxy() {
		if c.Handoff == h {
			return 1000 * c.Issue[0], 1000 * c.RTT[0]
		}
	}
	return math.NaN(), math.NaN()
}

func writeCalibrationTable(w io.Writer, m gda.Measured, consts []profile.Constant, o calibrateOptions) error {
	t := &calibTable{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight), m: &m}
	fmt.Fprintf(w, "moebench calibrate: %s, driver %s, CUDA %s, %d SMs, SM clock %.0f MHz (clock64/globaltimer)\n", m.GPU, m.Driver, m.CUDA, m.SMs, m.ClockMHz)
	fmt.Fprintf(w, "host: %s\n", m.Host)
	fmt.Fprintf(w, "WQE check: %d GPU-built mlx5 RDMA-write WQEs decoded and matched field by field\n\n", m.WQEsVerified)
	t.issue()
	t.inline()
	t.micro()
	t.rates(calib.RateRows(o.quick))
	t.proxy()
	t.capacity()
	t.kernels()
	fmt.Fprintf(w, "\nConstants written to %s\n", o.out)
	t.p("name\tvalue\tunit\t\n")
	for _, c := range consts {
		if strings.HasSuffix(c.Name, ".ns") && c.Value == 0 {
			continue
		}
		t.p("%s\t%s\t%s\t\n", c.Name, fmt3(c.Value), c.Unit)
	}
	return t.tw.Flush()
}

// calibTable renders measurements section by section: a title on w, then
// the section's rows aligned through tw.
type calibTable struct {
	w  io.Writer
	tw *tabwriter.Writer
	m  *gda.Measured
}

func (t *calibTable) p(format string, a ...any) { fmt.Fprintf(t.tw, format, a...) }

// issue is one thread's issue per ordering, mlx5 and then EFA's.
func (t *calibTable) issue() {
	m := t.m
	fmt.Fprintln(t.w, "Issue, one thread, 8 B inline RDMA write, median ns (paper P-IB: Table 4)")
	t.p("mode\thost-mapped doorbell\tdevice doorbell\tpaper P-IB\t\n")
	for _, mode := range native.OrderingModes {
		t.p("%s\t%.0f\t%.0f\t%.0f\t\n", mode, m.IssueNs[mode], m.IssueDeviceDoorbellNs[mode], paperIssueNs(mode))
	}
	t.p("%s\t%.0f\t\t\t\n", native.NoDoorbell, m.IssueNoDoorbellNs)
	t.tw.Flush()
	if len(m.EFAIssueNs) == 0 {
		return
	}
	fmt.Fprintf(t.w, "\nIssue posting EFA's SRD WQEs as DP Direct does (64 B WQE, 32-bit producer-counter doorbell; %d checked byte for byte) beside mlx5's, one thread, 8 B RDMA write, median ns\n", m.EFAWQEsVerified)
	t.p("mode\tEFA pointer, host-mapped\tEFA pointer, device\tmlx5 pointer, host-mapped\tmlx5 8 B inline, host-mapped\t\n")
	for _, mode := range native.EFAOrderingModes {
		t.p("%s\t%.0f\t%.0f\t%.0f\t%.0f\t\n", mode, m.EFAIssueNs[mode], m.EFAIssueDeviceDoorbellNs[mode], m.PointerIssueNs[mode], m.IssueNs[mode])
	}
	t.p("%s\t%.0f\t\t\t%.0f\t\n", native.NoDoorbell, m.EFAIssueNoDoorbellNs, m.IssueNoDoorbellNs)
	t.tw.Flush()
}

func (t *calibTable) inline() {
	m := t.m
	fmt.Fprintln(t.w, "\nInline payload, host-mapped doorbell, median ns (paper Fig. 3: about 100 ns per 16 B)")
	t.p("bytes\t16 B chunks\tgpu-fence\tnone\t\n")
	for _, b := range calib.InlineSizes {
		if v, ok := m.InlineIssueNs[b]; ok {
			t.p("%d\t%d\t%.0f\t%.0f\t\n", b, gda.InlineChunks(b), v, m.InlineIssueNoneNs[b])
		}
	}
	t.tw.Flush()
	sf, _ := gda.InlineSlope(m.InlineIssueNs)
	sn, _ := gda.InlineSlope(m.InlineIssueNoneNs)
	fmt.Fprintf(t.w, "slope: %.1f ns per 16 B with gpu-fence, %.1f ns without ordering\n", sf, sn)
}

func (t *calibTable) micro() {
	m := t.m
	fmt.Fprintln(t.w, "\nMicro-operations, one thread, ns")
	t.p("atomic\tL2 load\tstore16\thandoff\tCQ consume\thost load (PCIe)\thost store\t\n")
	t.p("%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t\n", m.AtomicNs, m.L2LoadNs, m.Store16Ns, m.HandoffNs, m.CQConsumeNs, m.HostLoadNs, m.HostStoreNs)
	t.tw.Flush()
}

// rates are the posting rates beside the paper's figure of the row
// measured in the same place.
func (t *calibTable) rates(rows []calib.RateRow) {
	fmt.Fprintln(t.w, "\nPosting rate, 8 B inline, gpu-fence ordering, M msg/s (paper P-IB: Table 5, with a NIC)")
	t.p("threads\tQPs\tSMs\tWQEs/doorbell\tstyle\tdoorbell\tmeasured\tpaper P-IB\t\n")
	for i, r := range t.m.Rates {
		paper := ""
		if i < len(rows) && rows[i].Paper > 0 {
			paper = fmt.Sprintf("%.3g", rows[i].Paper)
		}
		target := r.Target
		if target == "" {
			target = t.m.DoorbellTarget
		}
		t.p("%d\t%d\t%d\t%d\t%s\t%s\t%.3g\t%s\t\n", r.Threads, r.QPs, r.SMs, r.PerDoorbell, r.Style, target, r.Mps, paper)
	}
	t.tw.Flush()
}

func (t *calibTable) proxy() {
	fmt.Fprintln(t.w, "\nProxy handoff, one GPU thread, CPU worker thread on mapped host rings, median ns")
	t.p("variant\tenqueue\tpaper issue\tGPU->CPU->GPU round trip\tpaper RTT (with NIC)\t\n")
	for _, v := range native.EnqueueVariants {
		enq, rtt := paperProxyNs(v)
		t.p("%s\t%.0f\t%.0f\t%.0f\t%.0f\t\n", v, t.m.EnqueueNs[v], enq, t.m.HandoffRTTNs[v], rtt)
	}
	t.tw.Flush()
}

// capacity is the workers' rate, a row per worker count and a column per
// batch, in the order measured.
func (t *calibTable) capacity() {
	caps := t.m.WorkerCapacity
	if len(caps) == 0 {
		return
	}
	fmt.Fprintln(t.w, "\nCPU worker capacity, M descriptors/s consumed (32 GPU-fed rings; paper Table 10 includes ibv_post_send)")
	var batches, ws []int
	byW := map[int]map[int]float64{}
	for _, c := range caps {
		if !slices.Contains(batches, c.Batch) {
			batches = append(batches, c.Batch)
		}
		if byW[c.Workers] == nil {
			byW[c.Workers] = map[int]float64{}
			ws = append(ws, c.Workers)
		}
		byW[c.Workers][c.Batch] = c.Mps
	}
	t.p("workers")
	for _, b := range batches {
		t.p("\tB=%d", b)
	}
	t.p("\t\n")
	for _, wk := range ws {
		t.p("%d", wk)
		for _, b := range batches {
			t.p("\t%.3g", byW[wk][b])
		}
		t.p("\t\n")
	}
	t.tw.Flush()
}

func (t *calibTable) kernels() {
	if len(t.m.KernelCost) == 0 {
		return
	}
	fmt.Fprintln(t.w, "\nEnclosing kernel, 256 threads per block (paper Fig. 9, Table 14)")
	t.p("caller\tblocks\tpath\tmessages/block\tregs\tblocks/SM\tms\tloss %%\t\n")
	for _, k := range t.m.KernelCost {
		what := k.Path
		if k.Path != "absent" && k.Msgs == 0 {
			what += " (dormant)"
		} else if k.Wait {
			what += " + wait"
		}
		t.p("%s\t%d\t%s\t%d\t%d\t%d\t%.3f\t%.1f\t\n", k.Caller, k.Blocks, what, k.Msgs, k.Regs, k.MaxBlocksPerSM, k.Ms, k.LossPct)
	}
	t.tw.Flush()
}

func fmt3(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e6 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}
