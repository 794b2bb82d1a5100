package main

import (
	"fmt"
	"io"

	"moebench/internal/report"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/results"
	"moebench/workloads"
)

// calibrateCompute times the expert GEMMs of DeepSeek-V3's shape alone
// and beside a normal-mode dispatch, fits the model's compute costs and
// writes them as a profile fragment.
func calibrateCompute(o calibrateOptions, stdout, stderr io.Writer) error {
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		return err
	}
	var m calib.ComputeMeasured
	if o.fromRaw != "" {
		if m, err = calib.ReadComputeMeasured(o.fromRaw); err != nil {
			return err
		}
	} else {
		lib, err := native.Open(o.lib)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		defer lib.Close()
		progress := func(s string) { fmt.Fprintln(stderr, "calibrate:", s) }
		if m, err = calib.MeasureExperts(lib, w, o.quick, progress); err != nil {
			return err
		}
	}
	return finishCompute(m, o, stdout)
}

// finishCompute fits the compute model, writes the fragment (with the
// raw record inside it) and the raw file, and renders the fit.
func finishCompute(m calib.ComputeMeasured, o calibrateOptions, stdout io.Writer) error {
	if !o.baseSet {
		// The fit rests on the datasheet's peaks: take the measured GPU's.
		o.base = profile.ForGPU(m.GPU)
	}
	base, err := profile.Load(o.base)
	if err != nil {
		return profileErr("--base", err)
	}
	fit, consts, err := calib.Compute(m, base, o.base, o.files())
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	h := report.Header{Tool: "moebench", Version: version, Command: "calibrate --compute"}
	return results.Render(stdout, o.format, results.NewComputeCalibration(h, m, fit, consts))
}
