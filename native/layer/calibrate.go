package layer

import (
	"fmt"

	"moebench/native"
	"moebench/profile"
)

// Calibration is a bounded fit of a grid's runs and each configuration's
// prediction from a fit without it.
type Calibration struct {
	Raw          *Raw
	Fit          *FitResult
	LeftOut      []Comparison // in the order of Fit.After
	LeftOutEvals int          // model evaluations the leaving out took
}

// Calibrate fits raw on base (Fit; source names what the constants came
// from), then predicts each configuration from a fit without it. Each
// left out costs a few steps of its stage's fit from the full fit's
// constants: about what the fit cost again.
func Calibrate(raw *Raw, base *profile.Profile, source string, progress func(string)) (*Calibration, error) {
	if progress == nil {
		progress = func(string) {}
	}
	progress("fitting the model's kernel-side and emulated-NIC constants (a few minutes)")
	fit, err := Fit(raw, base, source, progress)
	if err != nil {
		return nil, err
	}
	progress(fmt.Sprintf("predicting each of the %d configurations from a fit without it", len(raw.Runs)))
	loo, evals, err := fit.LeaveOneOut(nil)
	if err != nil {
		return nil, fmt.Errorf("leave one out: %w", err)
	}
	return &Calibration{Raw: raw, Fit: fit, LeftOut: loo, LeftOutEvals: evals}, nil
}

// MeasureGrid runs the grid named (Grid, an error wrapping ErrGrid when
// there is none such on this host) on the library's GPUs, only its first
// two points when quick, each with the default warm-up and repetitions
// and the L2 flushed before it. progress, when set, hears of the device
// and of each run.
func MeasureGrid(lib Runner, name string, quick bool, progress func(string)) (*Raw, error) {
	gpus, err := lib.DeviceCount()
	if err != nil {
		return nil, err
	}
	grid, err := Grid(name, gpus)
	if err != nil {
		return nil, err
	}
	if quick {
		grid = grid[:2]
	}
	if progress != nil {
		dev := lib.Device()
		progress(fmt.Sprintf("%s, driver %s, CUDA %s, %d SMs: %d native layer runs", dev.Name, dev.Driver, native.CUDAVersion(dev.CUDARuntime), dev.SMs, len(grid)))
	}
	return Measure(lib, grid, Options{Warmup: DefaultWarmup, Reps: DefaultReps, FlushL2: true}, progress)
}
