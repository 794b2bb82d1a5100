package calib

import (
	"encoding/json"
	"fmt"

	"moebench/internal/inputfile"
	"moebench/profile"
	"moebench/transport/gda"
)

// ParseMeasured reads the raw record of a GPU's measurement (Measure's,
// as calibrate writes it beside its fragment).
func ParseMeasured(data []byte) (gda.Measured, error) {
	var m gda.Measured
	if err := json.Unmarshal(data, &m); err != nil {
		return m, inputfile.JSONError("", data, err)
	}
	return m, nil
}

// ParseComputeMeasured reads the raw record of the expert GEMMs'
// measurement (MeasureExperts').
func ParseComputeMeasured(data []byte) (ComputeMeasured, error) {
	var m ComputeMeasured
	if err := json.Unmarshal(data, &m); err != nil {
		return m, inputfile.JSONError("", data, err)
	}
	return m, nil
}

// Fragment is the profile fragment of consts, fitted to m (Fit), that
// carries m for a later refit; out is the file it goes to, which its
// description tells to combine after a full profile.
func Fragment(m gda.Measured, consts []profile.Constant, out string) (profile.File, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return profile.File{}, err
	}
	return profile.File{
		Name:        "calibration",
		Description: fmt.Sprintf("GPU constants measured by moebench calibrate on %s (driver %s, CUDA %s) at %.0f MHz; combine after a full profile, e.g. p-ib,%s", m.GPU, m.Driver, m.CUDA, m.ClockMHz, out),
		Constants:   consts,
		Measured:    raw,
	}, nil
}

// ComputeFragment is the profile fragment of consts, fitted to m
// (ComputeFit.Constants) on the profile named base, that carries m; out
// is the file it goes to.
func ComputeFragment(m ComputeMeasured, consts []profile.Constant, base, out string) (profile.File, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return profile.File{}, err
	}
	return profile.File{
		Name: "compute-calibration",
		Description: fmt.Sprintf("expert GEMM constants fitted by moebench calibrate --compute on %s (driver %s, CUDA %s); combine after a full profile, e.g. %s,%s",
			m.GPU, m.Driver, m.CUDA, base, out),
		Constants: consts,
		Measured:  raw,
	}, nil
}
