package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/results"
	"moebench/transport/gda"
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
	fs.IntVar(&o.iters, "iters", 1000, fmt.Sprintf("timed operations per single-thread measurement (at most %d)", calib.MaxIters))
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
		return fmt.Errorf("%w: calibrate takes no arguments, got %s", errUsage, report.QuoteArgs(fs.Args()))
	}
	if o.format != "table" && o.format != "json" {
		return fmt.Errorf("%w: --format %s: want table or json", errUsage, report.Quote(o.format))
	}
	if err := (calib.Options{Iters: o.iters}).Check(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
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
		if f.Path == "-" {
			return fmt.Errorf("%w: %s -: calibrate writes a file there (a profile fragment, raw JSON), not stdout; name one", errUsage, f.Name)
		}
	}
	if err := checkOut("--out", o.out); err != nil {
		return err
	}
	if err := checkOut("--raw", o.raw); err != nil {
		return err
	}
	if err := checkFiles(o.outputs(), append(outfile.Named("--from-raw", splitList([]string{o.fromRaw})), append(profileArgs("--base", o.base), outfile.Arg{Name: "--lib", Path: o.lib})...)); err != nil {
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
		if err := checkFiles(o.outputs(), outfile.Existing("--base", b.Origins)); err != nil {
			return err
		}
		base = b
	}
	m, err := measureGPU(o, stderr)
	if err != nil {
		return err
	}
	return finishCalibration(m, base, o, stdout)
}

// measureGPU reads --from-raw's record, or measures this host's GPU.
func measureGPU(o calibrateOptions, stderr io.Writer) (gda.Measured, error) {
	if o.fromRaw != "" {
		return calib.ReadMeasured(o.fromRaw)
	}
	lib, err := native.Open(o.lib)
	if err != nil {
		return gda.Measured{}, fmt.Errorf("calibrate: %w", err)
	}
	defer lib.Close()
	progress := func(s string) { fmt.Fprintln(stderr, "calibrate:", s) }
	return calib.Measure(lib, calib.Options{Iters: o.iters, Quick: o.quick}, progress)
}

// finishCalibration fits, writes the files and renders the result.
func finishCalibration(m gda.Measured, base *profile.Profile, o calibrateOptions, stdout io.Writer) error {
	consts, err := calib.GPU(m, base, o.files())
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	doc := &results.GPUCalibration{Header: report.Header{Tool: "moebench", Version: version, Command: "calibrate"},
		Measured: m, Constants: consts, Out: o.out, Rates: calib.RateRows(o.quick)}
	return results.Render(stdout, o.format, doc)
}

// files are the fragment and raw record --out and --raw name.
func (o calibrateOptions) files() calib.Files { return calib.Files{Out: o.out, Raw: o.raw} }
