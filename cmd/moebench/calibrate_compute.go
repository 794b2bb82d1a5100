package main

import (
	"encoding/json"
	"fmt"
	"io"

	"moebench/internal/inputfile"
	"moebench/internal/report"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/results"
	"moebench/workloads"
)

// computeLib is what calibrate --compute needs of the native library.
type computeLib interface {
	calib.BesideRunner
	Close() error
}

var openComputeLib = func(path string) (computeLib, error) { return native.Open(path) }

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
		data, err := readMeasured("--from-raw", o.fromRaw)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("--from-raw %s: %w", o.fromRaw, inputfile.JSONError("", data, err))
		}
	} else {
		lib, err := openComputeLib(o.lib)
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
	fit, err := calib.FitCompute(m, base)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	consts := fit.Constants(m)
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	frag := profile.File{
		Name: "compute-calibration",
		Description: fmt.Sprintf("expert GEMM constants fitted by moebench calibrate --compute on %s (driver %s, CUDA %s); combine after a full profile, e.g. %s,%s",
			m.GPU, m.Driver, m.CUDA, o.base, o.out),
		Constants: consts,
		Measured:  raw,
	}
	if err := writeCalibration(o, frag, m); err != nil {
		return err
	}
	h := report.Header{Tool: "moebench", Version: version, Command: "calibrate --compute"}
	return results.Render(stdout, o.format, results.NewComputeCalibration(h, m, fit, consts))
}
