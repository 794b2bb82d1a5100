package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"

	"moebench/profile"
	"moebench/transport/gda"

	"moebench/internal/inputfile"
	"moebench/internal/report"
	"moebench/microbench"
	"moebench/published"
)

const validateExamples = `  moebench validate
  moebench validate --only single-op,ordering,inline,rate,completion-scope --format json
  moebench validate --set gpu.sm_clock_mhz=1500      # what a throttled SM does to the match
  moebench validate --fail-above 0.35                # exit 1 if any row is off by more than 35%
  moebench validate --against deepep                 # DeepEP V1's published runs on H800, predicted
`

func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "validate [flags]", validateExamples, stdout)
	var (
		out       outputFlags
		prof      profileFlags
		only      []string
		failAbove float64
		measured  string
	)
	fs.StringSliceVar(&only, "only", nil, "run only these `experiments` (comma list; default all)")
	fs.Float64Var(&failAbove, "fail-above", 0, "exit with an error when any row's relative error exceeds this `fraction` (0 = never)")
	fs.StringVar(&measured, "measured", "", "compare with this machine's measurements (`FILE` from calibrate --raw) instead of the paper")
	against := fs.String("against", "auto", "reference: paper, measured (the calibration in --profile or --measured), auto (measured when the profile carries a calibration), or a published suite: deepep (DeepEP V1's runs on H800, on p-h800 unless --profile is given)")
	plotPath := fs.String("plot", "", "also draw the model against the reference, log-log with y = x and a ±10% band, to `FILE` (.svg or .png)")
	prof.register(fs)
	out.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: validate takes no arguments (got %s); use --only", errUsage, quoteArgs(fs.Args()))
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := checkPlotPath("--plot", *plotPath); err != nil {
		return err
	}
	if err := checkFiles(out.outputs(fileArg{"--plot", *plotPath}), append(profileArgs("--profile", prof.spec), fileArg{"--measured", measured})); err != nil {
		return err
	}
	if err := checkFloat("fail-above", failAbove, 0, math.Inf(1)); err != nil {
		return err
	}
	p, err := prof.loadFor("validate", &out)
	if err != nil {
		return err
	}
	switch *against {
	case "auto", "paper", "measured":
	default:
		suite, err := published.Get(*against)
		if err != nil {
			return fmt.Errorf("%w: --against %s: want paper, measured, auto or a published suite (deepep)", errUsage, report.Quote(*against))
		}
		if measured != "" || len(only) > 0 {
			return fmt.Errorf("%w: --against %s takes neither --measured nor --only", errUsage, suite.Name)
		}
		return validatePublished(suite, prof, fs.Changed("profile"), out, stdout, failAbove, *plotPath)
	}
	raw, from := p.Measured()
	if measured != "" {
		data, err := readMeasured("--measured", measured)
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(data)) == 0 {
			return fmt.Errorf("--measured %s: the file is empty (want the raw JSON of moebench calibrate --raw)", measured)
		}
		raw, from = data, measured
	}
	if *against == "measured" || (*against == "auto" && len(raw) > 0) {
		if len(raw) == 0 {
			return fmt.Errorf("%w: --against measured: the profile carries no calibration and --measured is not given", errUsage)
		}
		return validateMeasured(p, from, raw, out, stdout, failAbove, *plotPath)
	}
	exps, err := microbench.Select(only)
	if err != nil {
		return fmt.Errorf("%w: --only: %v", errUsage, err)
	}
	var rows []microbench.Row
	for _, e := range exps {
		rs, err := e.Run(p)
		if err != nil {
			return fmt.Errorf("experiment %s: %w", e.Name, err)
		}
		for _, r := range rs {
			if r.HasPaper() {
				rows = append(rows, r)
			}
		}
	}
	sum := microbench.Summarize(rows)
	h := header("validate", p, "modelled vs the paper's measurements")
	return emitRows(out, stdout, h, rows, &sum, "paper", *plotPath, failAbove)
}

// emitRows writes validate's rows (and their plot, when asked) and fails
// when the worst row is off by more than failAbove, and then writes no
// file (the rows still go to stdout).
func emitRows(out outputFlags, stdout io.Writer, h report.Header, rows []microbench.Row, sum *microbench.Summary, ref, plotPath string, failAbove float64) error {
	fig, err := rowsFigure(plotPath, h, rows, sum, ref)
	if err != nil {
		return err
	}
	out.hold() // the rows and the plot, both or neither
	defer out.discard()
	if err := out.emit(stdout, func(w io.Writer) error { return renderRows(w, out.format, h, rows, sum, ref) }); err != nil {
		return err
	}
	if plotPath != "" {
		if err := out.writePlot(plotPath, fig); err != nil {
			return err
		}
	}
	if failAbove > 0 && sum.MaxErr > failAbove {
		return fmt.Errorf("%s is off by %.1f%%, above --fail-above %.1f%%%s", sum.Worst, 100*sum.MaxErr, 100*failAbove, notWritten(out.outs))
	}
	return out.commit()
}

// renderRows renders rows; ref names the reference column: "paper", or
// "measured" when the reference is this machine's measurement.
func renderRows(w io.Writer, format string, h report.Header, rows []microbench.Row, sum *microbench.Summary, ref string) error {
	switch format {
	case "json":
		items := []map[string]any{}
		for _, r := range rows {
			item := map[string]any{"experiment": r.Experiment, "case": r.Case, "metric": r.Metric, "unit": r.Unit,
				ref: nil, "model": r.Model, "rel_err": nil}
			if r.HasPaper() {
				item[ref] = r.Paper
				if e := r.RelErr(); !math.IsNaN(e) {
					item["rel_err"] = e
				}
			}
			items = append(items, item)
		}
		doc := struct {
			Header  report.Header       `json:"header"`
			Rows    []map[string]any    `json:"rows"`
			Summary *microbench.Summary `json:"summary,omitempty"`
		}{Header: h, Rows: items, Summary: sum}
		return report.WriteJSON(w, doc)
	default:
		t := &report.Table{
			Columns: []string{"experiment", "case", "metric", "unit", ref, "model", "rel_err"},
			Numeric: []bool{false, false, false, false, true, true, true},
		}
		for _, r := range rows {
			t.Rows = append(t.Rows, []string{r.Experiment, r.Case, r.Metric, r.Unit, report.Num(r.Paper), report.Num(r.Model), report.Pct(r.RelErr())})
		}
		if format == "csv" {
			for i := range t.Rows {
				// CSV carries full precision for further analysis.
				t.Rows[i][4] = csvNum(rows[i].Paper)
				t.Rows[i][5] = csvNum(rows[i].Model)
				t.Rows[i][6] = csvNum(rows[i].RelErr())
			}
			return t.WriteCSV(w, &h)
		}
		if err := t.WriteText(w, &h); err != nil {
			return err
		}
		if sum != nil && sum.Rows > 0 {
			_, err := fmt.Fprintf(w, "\n%d rows with a %s value: median error %s, mean %s, max %s (%s)\n",
				sum.Rows, ref, report.Pct(sum.MedianErr), report.Pct(sum.MeanErr), report.Pct(sum.MaxErr), sum.Worst)
			return err
		}
		return nil
	}
}

func csvNum(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.6g", v)
}

func nan() float64 { return math.NaN() }

// validateMeasured compares the model with a GPU's raw measurements.
func validateMeasured(p *profile.Profile, path string, data []byte, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	if raw, ok, err := parseLayerMeasured(data); ok {
		if err != nil {
			return fmt.Errorf("--measured %s: %w", path, err)
		}
		return validateLayer(p, path, raw, out, stdout, failAbove, plotPath)
	}
	var m gda.Measured
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("--measured %s: %w", path, inputfile.JSONError("", data, err))
	}
	if len(m.IssueNs) == 0 {
		return fmt.Errorf("--measured %s: no issue_ns measurements (want the raw JSON of moebench calibrate --raw)", path)
	}
	rows, err := microbench.CompareMeasured(p, m)
	if err != nil {
		return err
	}
	sum := microbench.Summarize(rows)
	h := header("validate", p, "modelled vs measured on "+m.GPU)
	h.Extra = append(h.Extra, fmt.Sprintf("measured: %s, driver %s, CUDA %s, SM clock %.0f MHz, doorbell %s; host %s",
		m.GPU, m.Driver, m.CUDA, m.ClockMHz, m.DoorbellTarget, m.Host))
	return emitRows(out, stdout, h, rows, &sum, "measured", plotPath, failAbove)
}
