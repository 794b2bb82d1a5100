package layer

import (
	"encoding/json"
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

// FitSource is the source a fit of raw gives its constants.
func FitSource(raw *Raw) string {
	dev := raw.Device
	return fmt.Sprintf("bounded fit: moebench calibrate --layer on %s (driver %s, CUDA %s): the model of %d native layer runs against their measurement, each constant within physical and datasheet bounds (native/layer.Fit)",
		dev.Name, dev.Driver, native.CUDAVersion(dev.CUDARuntime), len(raw.Runs))
}

// Fragment is the profile fragment of c's constants, fitted on the
// profile named base, that carries c's runs for a later refit; out is the
// file it goes to.
func (c *Calibration) Fragment(base, out string) (profile.File, error) {
	meas, err := json.Marshal(Measured{Layer: c.Raw})
	if err != nil {
		return profile.File{}, err
	}
	return profile.File{
		Name: "layer-calibration",
		Description: fmt.Sprintf("the layer kernels' own costs and the emulated NIC, fitted by moebench calibrate --layer on %s; combine after a full profile and its GPU calibration, e.g. %s,%s",
			c.Raw.Device.Name, base, out),
		Constants: c.Fit.Constants,
		Measured:  meas,
	}, nil
}
