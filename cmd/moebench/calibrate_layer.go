package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"moebench/internal/report"
	"moebench/microbench"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/profile"
)

// parseLayerMeasured reads a layer measurement (nativelayer.ParseMeasured).
func parseLayerMeasured(data []byte) (*nativelayer.Raw, bool, error) {
	return nativelayer.ParseMeasured(data)
}

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
	if err := checkFiles(o.outputs(), originArgs("--base", base)); err != nil {
		return err
	}
	if !slices.Contains(nativelayer.Grids, o.grid) {
		return fmt.Errorf("%w: --grid %s: want ll, normal, gpus, transfer or all", errUsage, report.Quote(o.grid))
	}
	raw, err := layerRuns(o, progress)
	if err != nil {
		return err
	}
	lf, err := fitLayer(o, raw, base, progress)
	if err != nil {
		return err
	}
	return lf.render(stdout, o)
}

// layerRuns reads --from-raw's runs, merged, or measures the grid on this
// host's GPU.
func layerRuns(o calibrateOptions, progress func(string)) (*nativelayer.Raw, error) {
	if o.fromRaw == "" {
		return measureLayer(o, progress)
	}
	var raw *nativelayer.Raw
	for _, path := range splitList([]string{o.fromRaw}) {
		data, err := readMeasured("--from-raw", path)
		if err != nil {
			return nil, err
		}
		r, ok, err := nativelayer.ParseMeasured(data)
		switch {
		case err != nil:
			return nil, fmt.Errorf("--from-raw %s: %w", path, err)
		case !ok:
			return nil, fmt.Errorf("--from-raw %s: no layer measurement (want calibrate --layer's --raw file or fragment)", path)
		}
		if raw == nil {
			raw = r
		} else if raw, err = raw.Merge(r); err != nil {
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
	gpus, err := lib.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	grid, err := nativelayer.Grid(o.grid, gpus)
	if err != nil {
		return nil, fmt.Errorf("%w: --%w", errUsage, err)
	}
	if o.quick {
		grid = grid[:2]
	}
	dev := lib.Device()
	progress(fmt.Sprintf("%s, driver %s, CUDA %s, %d SMs: %d native layer runs", dev.Name, dev.Driver, native.CUDAVersion(dev.CUDARuntime), dev.SMs, len(grid)))
	raw, err := nativelayer.Measure(lib, grid, nativelayer.Options{Warmup: nativelayer.DefaultWarmup, Reps: nativelayer.DefaultReps, FlushL2: true}, progress)
	if err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	return raw, nil
}

// layerFit is a bounded fit of the layer's runs, each configuration's
// prediction from a fit without it, and what the report needs beside.
type layerFit struct {
	raw      *nativelayer.Raw
	base     *profile.Profile
	fit      *nativelayer.FitResult
	loo      []nativelayer.Comparison
	looEvals int
}

// fitLayer fits raw on base, leaves each configuration out, and writes
// --raw and --out together once both are done: a failed fit writes no
// file.
func fitLayer(o calibrateOptions, raw *nativelayer.Raw, base *profile.Profile, progress func(string)) (*layerFit, error) {
	var files outputFlags
	files.hold()
	defer files.discard()
	if o.raw != "" {
		if err := files.write(o.raw, func(w io.Writer) error { return writeJSON(w, raw) }); err != nil {
			return nil, fmt.Errorf("calibrate --layer: --raw: %w", err)
		}
	}
	dev := raw.Device
	source := fmt.Sprintf("bounded fit: moebench calibrate --layer on %s (driver %s, CUDA %s): the model of %d native layer runs against their measurement, each constant within physical and datasheet bounds (native/layer.Fit)",
		dev.Name, dev.Driver, native.CUDAVersion(dev.CUDARuntime), len(raw.Runs))
	progress("fitting the model's kernel-side and emulated-NIC constants (a few minutes)")
	fit, err := nativelayer.Fit(raw, base, source, progress)
	if err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	// Each configuration left out costs a few steps of its stage's fit,
	// from the full fit's constants: about what the fit cost again.
	progress(fmt.Sprintf("predicting each of the %d configurations from a fit without it", len(raw.Runs)))
	loo, looEvals, err := fit.LeaveOneOut(nil)
	if err != nil {
		return nil, fmt.Errorf("calibrate --layer: leave one out: %w", err)
	}
	meas, err := json.Marshal(nativelayer.Measured{Layer: raw})
	if err != nil {
		return nil, err
	}
	frag := profile.File{
		Name: "layer-calibration",
		Description: fmt.Sprintf("the layer kernels' own costs and the emulated NIC, fitted by moebench calibrate --layer on %s; combine after a full profile and its GPU calibration, e.g. %s,%s",
			dev.Name, o.base, o.out),
		Constants: fit.Constants,
		Measured:  meas,
	}
	if err := files.write(o.out, func(w io.Writer) error { return profile.WriteFragment(w, frag) }); err != nil {
		return nil, fmt.Errorf("calibrate --layer: --out: %w", err)
	}
	if err := files.commit(); err != nil {
		return nil, fmt.Errorf("calibrate --layer: %w", err)
	}
	return &layerFit{raw: raw, base: base, fit: fit, loo: loo, looEvals: looEvals}, nil
}

// header is the report's header: the runs, the fit, the constants on a
// bound and the errors in and out of sample.
func (l *layerFit) header(o calibrateOptions) report.Header {
	fit, raw := l.fit, l.raw
	h := header("calibrate --layer", fit.Profile, "modelled (after the fit) vs measured on "+raw.Device.Name)
	var names []string
	for _, f := range fit.OnBound() {
		names = append(names, f.Name+" ("+f.At+")")
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	h.Extra = []string{measuredLine(raw), fmt.Sprintf("%d native runs; fitted %d constants within their bounds in %d model evaluations, %d more to leave each configuration out; wrote %s",
		len(raw.Runs), len(fit.Constants), fit.Evals, l.looEvals, o.out),
		fmt.Sprintf("on a bound (the runs would take them past what the hardware allows): %s", strings.Join(names, ", ")),
		fmt.Sprintf("in sample: %s; leaving its configuration out: %s", errorSummary(fit.After, anyPoint), errorSummary(l.loo, anyPoint)),
		fmt.Sprintf("the DeepEP low-latency grid (2, 4, 8 ranks × 16, 128 tokens × 4 paths): %s", gridSummary(fit.After)),
		fmt.Sprintf("normal mode (2, 4, 8 ranks × 1024, 4096 tokens; a tail every 2 and 16 tokens at 4 × 4096): %s", normalSummary(fit.After))}
	if s := gpusSummary(fit.After); s != "not measured" {
		h.Extra = append(h.Extra, "one rank per GPU across NVLink: "+s)
	}
	return h
}

// render writes the fit as --format asks: the phases modelled beside
// measured, the fitted constants with their bounds, and each
// configuration in and out of sample.
func (l *layerFit) render(w io.Writer, o calibrateOptions) error {
	fit := l.fit
	rows := layerRows(fit.After)
	sum := microbench.Summarize(rows)
	h := l.header(o)
	looRows := leaveOneOutRows(fit.After, l.loo)
	if o.format == "json" {
		type bounded struct {
			Name   string  `json:"name"`
			Value  float64 `json:"value"`
			Unit   string  `json:"unit"`
			Lower  float64 `json:"lower"`
			Upper  float64 `json:"upper"`
			At     string  `json:"on_bound,omitempty"`
			Source string  `json:"bounds_source"`
		}
		var bs []bounded
		for _, f := range fit.Fitted {
			bs = append(bs, bounded{f.Name, f.Value, f.Unit, f.Lo, f.Hi, f.At, f.Why})
		}
		return writeJSON(w, struct {
			Header      report.Header      `json:"header"`
			Constants   []profile.Constant `json:"constants"`
			Bounds      []bounded          `json:"bounds"`
			Rows        []microbench.Row   `json:"rows"`
			LeaveOneOut []looRow           `json:"leave_one_out"`
			Summary     microbench.Summary `json:"summary"`
		}{h, fit.Constants, bs, rows, looRows, sum})
	}
	if err := renderRows(w, "table", h, rows, &sum, "measured"); err != nil {
		return err
	}
	t := &report.Table{Columns: []string{"constant", "value", "unit", "was", "lower", "upper", "on bound"}, Numeric: []bool{false, true, false, true, true, true, false}}
	for _, f := range fit.Fitted {
		t.Rows = append(t.Rows, []string{f.Name, report.Num(f.Value), f.Unit, report.Num(l.base.Get(f.Name)), report.Num(f.Lo), report.Num(f.Hi), f.At})
	}
	lt := &report.Table{Columns: []string{"case", "metric", "measured", "in sample", "left out"}, Numeric: []bool{false, false, true, true, true}}
	for _, r := range looRows {
		lt.Rows = append(lt.Rows, []string{r.Case, r.Metric, report.Num(r.Measured), signedPct(r.InSample), signedPct(r.LeftOut)})
	}
	for _, part := range []struct {
		title string
		t     *report.Table
	}{{"\nFitted constants, each within bounds from physics or the GPU's datasheet:\n\n", t},
		{"\nEach configuration predicted by the fit of all runs (in sample) and by a fit without it (left out), model/measured - 1:\n\n", lt}} {
		if _, err := io.WriteString(w, part.title); err != nil {
			return err
		}
		if err := part.t.WriteText(w, nil); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\nBounds:\n\n"); err != nil {
		return err
	}
	for _, f := range fit.Fitted {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", f.Name, f.Why); err != nil {
			return err
		}
	}
	return nil
}

// looRow is one run's phase: its error in sample and left out.
type looRow struct {
	Case     string  `json:"case"`
	Metric   string  `json:"metric"`
	Measured float64 `json:"measured_us"`
	InSample float64 `json:"in_sample_error"`
	LeftOut  float64 `json:"left_out_error"`
}

func leaveOneOutRows(in, out []nativelayer.Comparison) []looRow {
	var rows []looRow
	for i, c := range in {
		d, m := c.Error()
		ld, lm := out[i].Error()
		name := layerRows(in[i : i+1])[0].Case
		rows = append(rows, looRow{name, "dispatch", c.Run.Dispatch.ReadyUs, d, ld}, looRow{name, "combine", c.Run.Combine.ReadyUs, m, lm})
	}
	return rows
}

func signedPct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func anyPoint(nativelayer.GridPoint) bool { return true }

// measuredLine says where the runs were measured; the header's own host
// line is where they were fitted, often another machine.
func measuredLine(raw *nativelayer.Raw) string {
	s := fmt.Sprintf("measured: %s (driver %s, CUDA %s, SM clock %.0f MHz)", raw.Device.Name, raw.Device.Driver,
		native.CUDAVersion(raw.Device.CUDARuntime), raw.ClockMHz)
	if raw.Host != "" {
		s += "; host " + raw.Host
	}
	return s
}

// layerRows turns comparisons into validate's rows: one per run and phase.
func layerRows(cs []nativelayer.Comparison) []microbench.Row {
	var rows []microbench.Row
	for _, c := range cs {
		p := c.Run.Point
		name := p.Name()
		if p.Hidden != 7168 || p.TopK != 8 || p.SMsPerRank != 0 {
			name += fmt.Sprintf(" (hidden %d, top-%d, %d SMs)", p.Hidden, p.TopK, c.Run.Config.SMsPerRank)
		}
		rows = append(rows,
			microbench.Row{Experiment: "layer", Case: name, Metric: "dispatch", Unit: "µs", Paper: c.Run.Dispatch.ReadyUs, Model: c.Dispatch, Source: "native"},
			microbench.Row{Experiment: "layer", Case: name, Metric: "combine", Unit: "µs", Paper: c.Run.Combine.ReadyUs, Model: c.Combine, Source: "native"})
	}
	return rows
}

// gridSummary is the done-when figure: over the 24 runs of DeepEP's shape
// at default SMs, the median and worst errors and how many are within 15%.
func gridSummary(cs []nativelayer.Comparison) string {
	var errs []float64
	for _, c := range cs {
		p := c.Run.Point
		if p.Hidden != 7168 || p.TopK != 8 || p.SMsPerRank != 0 || p.Experts != 288 || p.Normal || p.GPUs > 1 {
			continue
		}
		d, m := c.Error()
		errs = append(errs, math.Abs(d), math.Abs(m))
	}
	if len(errs) == 0 {
		return "not measured"
	}
	within := 0
	worst := 0.0
	for _, e := range errs {
		if e <= 0.15 {
			within++
		}
		worst = max(worst, e)
	}
	return fmt.Sprintf("%d of %d phase means within 15%%, worst %s", within, len(errs), strconv.FormatFloat(100*worst, 'f', 1, 64)+"%")
}

// normalSummary is how the model meets the normal-mode runs on one GPU:
// the median and worst phase errors.
func normalSummary(cs []nativelayer.Comparison) string {
	return errorSummary(cs, func(p nativelayer.GridPoint) bool { return p.Normal && p.GPUs <= 1 })
}

// gpusSummary is the same over the runs across GPUs.
func gpusSummary(cs []nativelayer.Comparison) string {
	return errorSummary(cs, func(p nativelayer.GridPoint) bool { return p.GPUs > 1 })
}

func errorSummary(cs []nativelayer.Comparison, take func(nativelayer.GridPoint) bool) string {
	var errs []float64
	for _, c := range cs {
		if take(c.Run.Point) {
			d, m := c.Error()
			errs = append(errs, math.Abs(d), math.Abs(m))
		}
	}
	if len(errs) == 0 {
		return "not measured"
	}
	sort.Float64s(errs)
	med := errs[len(errs)/2]
	if len(errs)%2 == 0 {
		med = (errs[len(errs)/2-1] + errs[len(errs)/2]) / 2
	}
	return fmt.Sprintf("%d phase means, median error %s, worst %s", len(errs), strconv.FormatFloat(100*med, 'f', 1, 64)+"%",
		strconv.FormatFloat(100*errs[len(errs)-1], 'f', 1, 64)+"%")
}

// validateLayer is validate on a profile that carries a layer calibration:
// the model of every native run beside its measurement.
func validateLayer(p *profile.Profile, path string, raw *nativelayer.Raw, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	cs, err := nativelayer.Compare(raw, p)
	if err != nil {
		return err
	}
	rows := layerRows(cs)
	sum := microbench.Summarize(rows)
	h := header("validate", p, "modelled vs measured by the native engine on "+raw.Device.Name)
	h.Extra = append(h.Extra, fmt.Sprintf("%s; %d native layer runs from %s", measuredLine(raw), len(raw.Runs), path), "grid: "+gridSummary(cs),
		"normal mode: "+normalSummary(cs))
	return emitRows(out, stdout, h, rows, &sum, "measured", plotPath, failAbove)
}
