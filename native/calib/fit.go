package calib

import (
	"moebench/profile"
	"moebench/transport/gda"
)

// Fit turns a GPU's measurements into the model's constants: each
// inverted directly from its measurement (gda.FitGPU), then, with a base
// profile, refined by running the model against the measured issue
// times, since the direct inversions ignore how the model composes a
// sequence. A nil base skips the refinement.
func Fit(m gda.Measured, base *profile.Profile) ([]profile.Constant, error) {
	consts, err := gda.FitGPU(m, base)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return consts, nil
	}
	consts, _, _, err = gda.Refine(m, base, consts)
	return consts, err
}
