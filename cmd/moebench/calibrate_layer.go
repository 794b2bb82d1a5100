package main

import (
	"errors"
	"fmt"
	"io"

	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/profile"
	"moebench/results"
)

// calibrateLayer is calibrate --layer: measure the grid on this host's GPU
// (or read an earlier measurement), fit the kernel-side and emulated-NIC
// constants through the model, write the fragment and show model beside
// measurement.
func calibrateLayer(o calibrateOptions, stdout, stderr io.Writer) error {
	progress := func(s string) { fmt.Fprintln(stderr, "calibrate --layer:", s) }
	base, err := profile.Load(o.base)
	if err != nil {
		return profileErr("--base", err)
	}
	if err := checkFiles(o.outputs(), outfile.Existing("--base", base.Origins)); err != nil {
		return err
	}
	if err := nativelayer.CheckGrid(o.grid); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	raw, err := layerRuns(o, progress)
	if err != nil {
		return err
	}
	c, err := fitLayer(o, raw, base, progress)
	if err != nil {
		return err
	}
	h := header("calibrate --layer", c.Fit.Profile, "modelled (after the fit) vs measured on "+raw.Device.Name)
	return results.Render(stdout, o.format, results.NewLayerCalibration(h, c, base, o.out))
}

// layerRuns reads --from-raw's runs, merged, or measures the grid on this
// host's GPU.
func layerRuns(o calibrateOptions, progress func(string)) (*nativelayer.Raw, error) {
	if o.fromRaw == "" {
		return measureLayer(o, progress)
	}
	var raw *nativelayer.Raw
	for _, path := range splitList([]string{o.fromRaw}) {
		data, err := native.ReadRaw(path)
		if err != nil {
			return nil, fmt.Errorf("--from-raw: %w", err)
		}
		raw, err = nativelayer.AddMeasured(raw, data)
		switch {
		case errors.Is(err, nativelayer.ErrNoLayer):
			return nil, fmt.Errorf("--from-raw %s: no layer measurement (want calibrate --layer's --raw file or fragment)", path)
		case err != nil:
			return nil, fmt.Errorf("--from-raw %s: %w", path, err)
		}
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: --from-raw: no file given", errUsage)
	}
	return raw, nil
}

// measureLayer runs --grid's native layer runs on this host's GPUs.
func measureLayer(o calibrateOptions, progress func(string)) (*nativelayer.Raw, error) {
	lib, err := openNativeLib(o.lib)
	if err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	raw, err := nativelayer.MeasureGrid(lib, o.grid, o.quick, progress)
	switch {
	case errors.Is(err, nativelayer.ErrGrid):
		return nil, fmt.Errorf("%w: --%w", errUsage, err)
	case err != nil:
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	return raw, nil
}

// fitLayer fits raw on base, leaves each configuration out, and writes
// --raw and --out together once both are done: a failed fit writes no
// file.
func fitLayer(o calibrateOptions, raw *nativelayer.Raw, base *profile.Profile, progress func(string)) (*nativelayer.Calibration, error) {
	var files outfile.Set
	files.Hold()
	defer files.Discard()
	if o.raw != "" {
		if err := files.Write(o.raw, func(w io.Writer) error { return report.WriteJSON(w, raw) }); err != nil {
			return nil, fmt.Errorf("calibrate --layer: --raw: %w", err)
		}
	}
	c, err := nativelayer.Calibrate(raw, base, nativelayer.FitSource(raw), progress)
	if err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	frag, err := c.Fragment(o.base, o.out)
	if err != nil {
		return nil, err
	}
	if err := files.Write(o.out, func(w io.Writer) error { return profile.WriteFragment(w, frag) }); err != nil {
		return nil, fmt.Errorf("calibrate --layer: --out: %w", err)
	}
	if err := files.Commit(); err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	return c, nil
}

// validateLayer is validate on a profile that carries a layer calibration:
// the model of every native run beside its measurement.
func validateLayer(p *profile.Profile, path string, raw *nativelayer.Raw, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	cs, err := nativelayer.Compare(raw, p)
	if err != nil {
		return err
	}
	h := header("validate", p, "modelled vs measured by the native engine on "+raw.Device.Name)
	return emitValidate(out, stdout, results.NewValidateLayer(h, raw, cs, path), "measured", plotPath, failAbove)
}
