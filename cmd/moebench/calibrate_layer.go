package main

import (
	"errors"
	"fmt"
	"io"

	"moebench/internal/outfile"
	"moebench/native/calib"
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
	c, err := calib.Layer(raw, base, o.base, o.files(), progress)
	if err != nil {
		return fmt.Errorf("calibrate --layer: %w", err)
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
	raw, err := calib.ReadLayer(splitList([]string{o.fromRaw}))
	if errors.Is(err, nativelayer.ErrNoLayer) {
		return nil, fmt.Errorf("%s (want calibrate --layer's --raw file or fragment)", message(err))
	}
	if err != nil {
		return nil, err
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
