package results

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"moebench/internal/report"
	"moebench/microbench"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/profile"
)

// LayerCalibration is calibrate --layer's document: the phases modelled
// after the fit beside measured, the fitted constants with their bounds,
// and each configuration in and out of sample.
type LayerCalibration struct {
	Header      report.Header      `json:"header"`
	Constants   []profile.Constant `json:"constants"`
	Bounds      []Bound            `json:"bounds"`
	Rows        []microbench.Row   `json:"rows"`
	LeaveOneOut []LeaveOneOutRow   `json:"leave_one_out"`
	Summary     microbench.Summary `json:"summary"`
	was         []float64          // each bound's constant in the base profile
}

// Bound is one fitted constant and the bounds it was fitted within.
type Bound struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Lower  float64 `json:"lower"`
	Upper  float64 `json:"upper"`
	At     string  `json:"on_bound,omitempty"`
	Source string  `json:"bounds_source"`
}

// Head is the document's header.
func (d *LayerCalibration) Head() report.Header { return d.Header }

// NewLayerCalibration is the document of c, fitted on base and written
// to out; h gains the runs, the fit, the constants on a bound and the
// errors in and out of sample.
func NewLayerCalibration(h report.Header, c *nativelayer.Calibration, base *profile.Profile, out string) *LayerCalibration {
	fit, raw := c.Fit, c.Raw
	var names []string
	for _, f := range fit.OnBound() {
		names = append(names, f.Name+" ("+f.At+")")
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	h.Extra = []string{MeasuredLine(raw), fmt.Sprintf("%d native runs; fitted %d constants within their bounds in %d model evaluations, %d more to leave each configuration out; wrote %s",
		len(raw.Runs), len(fit.Constants), fit.Evals, c.LeftOutEvals, out),
		fmt.Sprintf("on a bound (the runs would take them past what the hardware allows): %s", strings.Join(names, ", ")),
		fmt.Sprintf("in sample: %s; leaving its configuration out: %s", errorSummary(fit.After, anyPoint), errorSummary(c.LeftOut, anyPoint)),
		fmt.Sprintf("the DeepEP low-latency grid (2, 4, 8 ranks × 16, 128 tokens × 4 paths): %s", GridSummary(fit.After)),
		fmt.Sprintf("normal mode (2, 4, 8 ranks × 1024, 4096 tokens; a tail every 2 and 16 tokens at 4 × 4096): %s", NormalSummary(fit.After))}
	if s := gpusSummary(fit.After); s != "not measured" {
		h.Extra = append(h.Extra, "one rank per GPU across NVLink: "+s)
	}
	rows := LayerRows(fit.After)
	d := &LayerCalibration{Header: h, Constants: fit.Constants, Rows: rows, LeaveOneOut: leaveOneOutRows(fit.After, c.LeftOut),
		Summary: microbench.Summarize(rows)}
	for _, f := range fit.Fitted {
		d.Bounds = append(d.Bounds, Bound{f.Name, f.Value, f.Unit, f.Lo, f.Hi, f.At, f.Why})
		d.was = append(d.was, base.Get(f.Name))
	}
	return d
}

// WriteText writes validate's table of the phases, then the fitted
// constants, each configuration in and out of sample, and the bounds'
// reasons.
func (d *LayerCalibration) WriteText(w io.Writer) error {
	if err := NewValidate(d.Header, d.Rows, &d.Summary, "measured").WriteText(w); err != nil {
		return err
	}
	t := &report.Table{Columns: []string{"constant", "value", "unit", "was", "lower", "upper", "on bound"}, Numeric: []bool{false, true, false, true, true, true, false}}
	for i, f := range d.Bounds {
		t.Rows = append(t.Rows, []string{f.Name, report.Num(f.Value), f.Unit, report.Num(d.was[i]), report.Num(f.Lower), report.Num(f.Upper), f.At})
	}
	lt := &report.Table{Columns: []string{"case", "metric", "measured", "in sample", "left out"}, Numeric: []bool{false, false, true, true, true}}
	for _, r := range d.LeaveOneOut {
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
	for _, f := range d.Bounds {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", f.Name, f.Source); err != nil {
			return err
		}
	}
	return nil
}

// NewValidateLayer is validate's document of a profile's model of every
// native layer run (cs, compared from raw, read from path) beside its
// measurement.
func NewValidateLayer(h report.Header, raw *nativelayer.Raw, cs []nativelayer.Comparison, path string) *Validate {
	rows := LayerRows(cs)
	sum := microbench.Summarize(rows)
	h.Extra = append(h.Extra, fmt.Sprintf("%s; %d native layer runs from %s", MeasuredLine(raw), len(raw.Runs), path), "grid: "+GridSummary(cs),
		"normal mode: "+NormalSummary(cs))
	return NewValidate(h, rows, &sum, "measured")
}

// LeaveOneOutRow is one run's phase: its error in sample and left out.
type LeaveOneOutRow struct {
	Case     string  `json:"case"`
	Metric   string  `json:"metric"`
	Measured float64 `json:"measured_us"`
	InSample float64 `json:"in_sample_error"`
	LeftOut  float64 `json:"left_out_error"`
}

func leaveOneOutRows(in, out []nativelayer.Comparison) []LeaveOneOutRow {
	var rows []LeaveOneOutRow
	for i, c := range in {
		d, m := c.Error()
		ld, lm := out[i].Error()
		name := LayerRows(in[i : i+1])[0].Case
		rows = append(rows, LeaveOneOutRow{name, "dispatch", c.Run.Dispatch.ReadyUs, d, ld}, LeaveOneOutRow{name, "combine", c.Run.Combine.ReadyUs, m, lm})
	}
	return rows
}

func signedPct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func anyPoint(nativelayer.GridPoint) bool { return true }

// MeasuredLine says where the runs were measured; the header's own host
// line is where they were fitted, often another machine.
func MeasuredLine(raw *nativelayer.Raw) string {
	s := fmt.Sprintf("measured: %s (driver %s, CUDA %s, SM clock %.0f MHz)", raw.Device.Name, raw.Device.Driver,
		native.CUDAVersion(raw.Device.CUDARuntime), raw.ClockMHz)
	if raw.Host != "" {
		s += "; host " + raw.Host
	}
	return s
}

// LayerRows turns comparisons into validate's rows: one per run and phase.
func LayerRows(cs []nativelayer.Comparison) []microbench.Row {
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

// GridSummary is the done-when figure: over the 24 runs of DeepEP's shape
// at default SMs, the median and worst errors and how many are within 15%.
func GridSummary(cs []nativelayer.Comparison) string {
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

// NormalSummary is how the model meets the normal-mode runs on one GPU:
// the median and worst phase errors.
func NormalSummary(cs []nativelayer.Comparison) string {
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
