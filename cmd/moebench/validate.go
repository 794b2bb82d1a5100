package main

import (
	"fmt"
	"io"
	"math"

	"moebench/internal/report"
	"moebench/transport/mech"
)

const validateExamples = `  moebench validate
  moebench validate --only single-op,ordering,inline,rate,completion-scope --format json
  moebench validate --set gpu.sm_clock_mhz=1500      # what a throttled SM does to the match
  moebench validate --fail-above 0.35                # exit 1 if any row is off by more than 35%
`

func runValidate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("validate", "validate [flags]", validateExamples, stderr)
	var (
		out       outputFlags
		prof      profileFlags
		only      []string
		failAbove float64
	)
	fs.StringSliceVar(&only, "only", nil, "run only these `experiments` (comma list; default all)")
	fs.Float64Var(&failAbove, "fail-above", 0, "exit with an error when any row's relative error exceeds this `fraction` (0 = never)")
	prof.register(fs)
	out.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: validate takes no arguments (got %q); use --only", errUsage, fs.Args())
	}
	if err := out.check(); err != nil {
		return err
	}
	p, err := prof.load()
	if err != nil {
		return err
	}
	exps, err := mech.Select(only)
	if err != nil {
		return fmt.Errorf("%w: --only: %v", errUsage, err)
	}
	var rows []mech.Row
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
	sum := mech.Summarize(rows)
	h := header("validate", p, "modelled vs the paper's measurements")
	if err := out.emit(stdout, func(w io.Writer) error { return renderRows(w, out.format, h, rows, &sum) }); err != nil {
		return err
	}
	if failAbove > 0 && sum.MaxErr > failAbove {
		return fmt.Errorf("%s is off by %.1f%%, above --fail-above %.1f%%", sum.Worst, 100*sum.MaxErr, 100*failAbove)
	}
	return nil
}

// jsonRow has exactly the keys the validate JSON promises.
type jsonRow struct {
	Experiment string   `json:"experiment"`
	Case       string   `json:"case"`
	Metric     string   `json:"metric"`
	Unit       string   `json:"unit"`
	Paper      *float64 `json:"paper"`
	Model      float64  `json:"model"`
	RelErr     *float64 `json:"rel_err"`
}

func renderRows(w io.Writer, format string, h report.Header, rows []mech.Row, sum *mech.Summary) error {
	switch format {
	case "json":
		doc := struct {
			Header  report.Header `json:"header"`
			Rows    []jsonRow     `json:"rows"`
			Summary *mech.Summary `json:"summary,omitempty"`
		}{Header: h, Rows: []jsonRow{}, Summary: sum}
		for _, r := range rows {
			jr := jsonRow{r.Experiment, r.Case, r.Metric, r.Unit, nil, r.Model, nil}
			if r.HasPaper() {
				p, e := r.Paper, r.RelErr()
				jr.Paper = &p
				if !math.IsNaN(e) {
					jr.RelErr = &e
				}
			}
			doc.Rows = append(doc.Rows, jr)
		}
		return report.WriteJSON(w, doc)
	default:
		t := &report.Table{
			Columns: []string{"experiment", "case", "metric", "unit", "paper", "model", "rel_err"},
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
			_, err := fmt.Fprintf(w, "\n%d rows with a paper value: median error %s, mean %s, max %s (%s)\n",
				sum.Rows, report.Pct(sum.MedianErr), report.Pct(sum.MeanErr), report.Pct(sum.MaxErr), sum.Worst)
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
