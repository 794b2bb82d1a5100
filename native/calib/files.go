package calib

import (
	"io"

	"moebench/internal/field"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/profile"
	"moebench/transport/gda"
)

// Files are where a calibration goes: its profile fragment (Out) and,
// when named, the raw record it was fitted to (Raw). Both are written or
// neither, each atomically, so that a calibration that fails half way
// leaves no fragment without its record, nor the reverse. An error
// writing one is a field.Error of out or raw.
type Files struct{ Out, Raw string }

// Write writes frag to Out and raw, as JSON, to Raw.
func (f Files) Write(frag profile.File, raw any) error {
	var files outfile.Set
	files.Hold()
	defer files.Discard()
	if err := f.writeOut(&files, frag); err != nil {
		return err
	}
	if err := f.writeRaw(&files, raw); err != nil {
		return err
	}
	return files.Commit()
}

// writeOut prepares the fragment in files.
func (f Files) writeOut(files *outfile.Set, frag profile.File) error {
	if err := files.Write(f.Out, func(w io.Writer) error { return profile.WriteFragment(w, frag) }); err != nil {
		return field.Errorf("out", "%w", err)
	}
	return nil
}

// writeRaw prepares the raw record in files, when Raw is named.
func (f Files) writeRaw(files *outfile.Set, raw any) error {
	if f.Raw == "" {
		return nil
	}
	if err := files.Write(f.Raw, func(w io.Writer) error { return report.WriteJSON(w, raw) }); err != nil {
		return field.Errorf("raw", "%w", err)
	}
	return nil
}

// ReadMeasured reads the raw record of an earlier GPU measurement at
// path (ParseMeasured); its errors are field.Errors of from-raw, as is
// every read of this file's.
func ReadMeasured(path string) (gda.Measured, error) { return readRaw(path, ParseMeasured) }

// ReadComputeMeasured reads the raw record of an earlier measurement of
// the expert GEMMs at path (ParseComputeMeasured).
func ReadComputeMeasured(path string) (ComputeMeasured, error) {
	return readRaw(path, ParseComputeMeasured)
}

// readRaw reads the raw record at path with parse, each error a
// field.Error of from-raw.
func readRaw[T any](path string, parse func([]byte) (T, error)) (T, error) {
	var m T
	data, err := native.ReadRaw(path)
	if err != nil {
		return m, field.Errorf("from-raw", "%w", err)
	}
	if m, err = parse(data); err != nil {
		return m, field.Valuef("from-raw", path, "%w", err)
	}
	return m, nil
}

// ReadLayer reads the layer measurements at paths, merged into one
// (nativelayer.AddMeasured): runs measured apart on one GPU are fitted
// together. A file without one is ErrNoLayer's field.Error of from-raw.
func ReadLayer(paths []string) (*nativelayer.Raw, error) {
	var raw *nativelayer.Raw
	for _, path := range paths {
		data, err := native.ReadRaw(path)
		if err != nil {
			return nil, field.Errorf("from-raw", "%w", err)
		}
		if raw, err = nativelayer.AddMeasured(raw, data); err != nil {
			return nil, field.Valuef("from-raw", path, "%w", err)
		}
	}
	return raw, nil
}

// GPU fits m's GPU-side constants on base (Fit; nil: no base), writes
// their fragment and m to files, and returns the constants.
func GPU(m gda.Measured, base *profile.Profile, files Files) ([]profile.Constant, error) {
	consts, err := Fit(m, base)
	if err != nil {
		return nil, err
	}
	frag, err := Fragment(m, consts, files.Out)
	if err != nil {
		return nil, err
	}
	if err := files.Write(frag, m); err != nil {
		return nil, err
	}
	return consts, nil
}

// Compute fits the expert GEMMs' costs to m on base, the profile named
// baseName (FitCompute), writes their fragment and m to files, and
// returns the fit and its constants.
func Compute(m ComputeMeasured, base *profile.Profile, baseName string, files Files) (ComputeFit, []profile.Constant, error) {
	fit, err := FitCompute(m, base)
	if err != nil {
		return fit, nil, err
	}
	consts := fit.Constants(m)
	frag, err := ComputeFragment(m, consts, baseName, files.Out)
	if err != nil {
		return fit, nil, err
	}
	return fit, consts, files.Write(frag, m)
}

// Layer fits raw's layer constants on base, the profile named baseName
// (nativelayer.Calibrate), and writes their fragment and raw to files.
// Raw is prepared before the fit, so that a path that cannot be written
// is refused before minutes of fitting.
func Layer(raw *nativelayer.Raw, base *profile.Profile, baseName string, files Files, progress func(string)) (*nativelayer.Calibration, error) {
	var out outfile.Set
	out.Hold()
	defer out.Discard()
	if err := files.writeRaw(&out, raw); err != nil {
		return nil, err
	}
	c, err := nativelayer.Calibrate(raw, base, nativelayer.FitSource(raw), progress)
	if err != nil {
		return nil, err
	}
	frag, err := c.Fragment(baseName, files.Out)
	if err != nil {
		return nil, err
	}
	if err := files.writeOut(&out, frag); err != nil {
		return nil, err
	}
	return c, out.Commit()
}
