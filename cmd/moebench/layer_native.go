package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/profile"
	"moebench/results"
	"moebench/sweep"
)

// nativeFlags choose the engine and the native engine's knobs; those
// of the run's options are bound to them (nativeOptions adds the rest).
type nativeFlags struct {
	engine  string
	gpus    []int
	vranks  []int
	verify  bool
	lib     string
	ncclLib string
	opts    nativelayer.Options
}

func (n *nativeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&n.engine, "engine", "model", "model (the discrete-event model, any machine) or native (the layer's kernels on this host's GPUs; make native first)")
	fs.IntSliceVar(&n.gpus, "gpus", nil, "native: GPUs, one rank on each (with --virtual-ranks: that many ranks on each)")
	fs.IntSliceVar(&n.vranks, "virtual-ranks", nil, "native: ranks sharing one GPU, each with its own SMs and buffers")
	fs.IntVar(&n.opts.NICSMs, "nic-sms", nativelayer.DefaultNICSMs, "native: SMs per GPU running the emulated NIC")
	fs.IntVar(&n.opts.BgSMs, "bg-sms", nativelayer.DefaultBgSMs, "native: SMs per GPU posting --background traffic")
	fs.IntVar(&n.opts.Warmup, "warmup", nativelayer.DefaultWarmup, "native: untimed repetitions first")
	fs.IntVar(&n.opts.Reps, "reps", nativelayer.DefaultReps, "native: timed repetitions (each dispatch, then combine)")
	fs.BoolVar(&n.opts.FlushL2, "flush-l2", true, "native: overwrite the L2 before every launch, as DeepEP's benchmark does")
	fs.BoolVar(&n.verify, "verify", true, "native: check every token of every repetition")
	fs.BoolVar(&n.opts.Pace, "nic-pace", false, "native: pace the emulated NIC to the profile's line and message rates per rank")
	fs.StringVar(&n.lib, "lib", "", "native: path to libmoebench_native.so (default $"+native.LibEnv+" or native/build/)")
	fs.StringVar(&n.ncclLib, "nccl-lib", "", "native: NCCL's library for --transport nccl-a2a (default $"+ncclLibEnv+" or libnccl.so.2 on the loader's path)")
	fs.DurationVar(&n.opts.Timeout, "timeout", nativelayer.DefaultTimeout, "native: longest any GPU or CPU wait may take before the run fails")
}

// ncclLibEnv names NCCL's library when --nccl-lib is not given.
const ncclLibEnv = "MOEBENCH_NCCL_LIB"

func ncclLib(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(ncclLibEnv)
}

// openNativeLib opens the library; tests replace it with a fake.
var openNativeLib = func(path string) (nativelayer.Runner, error) { return native.Open(path) }

// nativeConfigs sets the ranks of every configuration from --gpus and
// --virtual-ranks and rejects the flags the native engine does not use.
func nativeConfigs(f *layerFlags, fs *pflag.FlagSet, configs []sweep.Point) ([]sweep.Point, error) {
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
	if err := f.nativeOptions().Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	out, err := sweep.OnGPUs(configs, gpus, vr, fs.Changed("ranks"), fs.Changed("chunk"))
	var re *sweep.RanksError
	switch {
	case errors.As(err, &re):
		return nil, fmt.Errorf("%w: --ranks %d: the native engine runs --gpus × --virtual-ranks = %d ranks", errUsage, re.Ranks, re.GPUs*re.Shared)
	case errors.Is(err, sweep.ErrNativeDispatch):
		return nil, fmt.Errorf("%w: %w (the model runs %s with --engine model)", errUsage, err, field.Fields(err)[0].Value)
	case errors.Is(err, sweep.ErrNativeChunk):
		return nil, fmt.Errorf("%w: %w (--mode normal)", errUsage, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return out, nil
}

// runNativeLayer is run and sweep on the native engine: each
// configuration and transport measured on the GPUs, the model's
// prediction beside it.
func runNativeLayer(name string, f *layerFlags, fs *pflag.FlagSet, base *profile.Profile, axes []sweep.SetAxis, configs []sweep.Point, spec moe.RoutingSpec, stdout, stderr io.Writer) error {
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
	n := &sweep.Native{Lib: lib, Points: configs, Paths: trs, NCCL: nccl, NCCLLib: ncclLib(f.native.ncclLib), Options: f.nativeOptions(),
		Inputs: &sweep.Inputs{Base: base, Routing: spec, Seed: f.seed}, Axes: axes, Varies: varies(fs), Log: f.log}
	bar := report.NewProgress(stderr, "moebench "+name+" (native)", len(configs)*len(trs), report.ProgressOptions{Force: f.progress})
	items, ncclItems, failed, err := n.Measure(bar.Step)
	if err != nil {
		return inputErr(err)
	}
	bar.Done()
	h := header(name, base, fmt.Sprintf("measured on %s (driver %s, CUDA %s) by the native engine; model columns modelled on the profile with the emulated NIC's constants",
		dev.Name, dev.Driver, native.CUDAVersion(dev.CUDARuntime)))
	h.Seed = &f.seed
	h.Extra = sweep.DescribeNative(f.workload, configs, spec, items)
	if c, ok := base.Constant("emunic.wqe_ns"); ok && strings.HasPrefix(c.Source, "model assumption") {
		// Without a layer calibration the model columns rest on guesses
		// for the emulated NIC; say how to replace them.
		h.Extra = append(h.Extra, "the emulated NIC's constants are assumptions: fit them with moebench calibrate --layer (an H200's fit: --profile p-ib,native/testdata/h200-calibration.json,native/testdata/h200-layer.json)")
	}
	// A run that failed its checks fails the command: the table still
	// goes to stdout, to show which, but no --out file is written.
	doc := &results.Native{Header: h, Workload: f.workload, Items: items, NCCL: ncclItems}
	return f.out.emitPlotted(stdout, func(w io.Writer) error { return results.Render(w, f.out.format, doc) }, "", nil, "", func() error {
		if failed > 0 {
			return fmt.Errorf("native engine: %d of %d runs failed their checks (see the problems above)%s", failed, len(items), f.out.NotWritten())
		}
		return nil
	})
}

// nativeLayerPaths is sweep.NativePaths of the flags, its refusals the
// command line's.
func nativeLayerPaths(f *layerFlags, fs *pflag.FlagSet, configs []sweep.Point) ([]nativelayer.Transport, bool, error) {
	trs, nccl, err := sweep.NativePaths(splitList(f.transports), splitList(f.presets), fs.Changed("preset"), fs.Changed("transport"), configs)
	switch {
	case errors.Is(err, sweep.ErrNCCLShared):
		return nil, false, fmt.Errorf("%w: %w (use --gpus N without --virtual-ranks)", errUsage, err)
	case errors.Is(err, sweep.ErrNCCLAlone):
		return nil, false, fmt.Errorf("%w: --transport %s is a baseline beside the layer: name a layer path too (e.g. --transport direct,%s)", errUsage, nativelayer.NCCLName, nativelayer.NCCLName)
	case err != nil:
		return nil, false, fmt.Errorf("%w: %w", errUsage, err)
	}
	return trs, nccl, nil
}

// nativeOptions are the native run options the flags give every point.
func (f *layerFlags) nativeOptions() nativelayer.Options {
	o := f.native.opts
	o.SMsPerRank, o.Chunk, o.NoVerify = f.numSMs, f.chunk, !f.native.verify
	return o
}
