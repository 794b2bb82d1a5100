package results

import (
	"fmt"
	"io"
	"math"

	"moebench/internal/plot"
	"moebench/internal/report"
	"moebench/microbench"
)

// Validate is validate's document: the model against a reference, row
// by row. Rows are as the JSON has them, each keyed by its reference's
// column (paper, measured or a published suite's name).
type Validate struct {
	Header  report.Header       `json:"header"`
	Rows    []map[string]any    `json:"rows"`
	Summary *microbench.Summary `json:"summary,omitempty"`

	// The rows behind Rows, for the table and CSV; with runs of a suite,
	// what each carries beyond them.
	ref   string
	rows  []microbench.Row
	extra []RunExtra
	suite string
}

// Head is the document's header.
func (d *Validate) Head() report.Header { return d.Header }

// RunExtra is what a row of a user's run carries beyond validate's row.
type RunExtra struct {
	BoundBy         string
	Published       float64 // NaN where the suite has no such row
	PublishedSource string
}

// NewValidate is the document of rows against ref: "paper", "measured"
// when the reference is this machine's measurement, or a published
// suite's name.
func NewValidate(h report.Header, rows []microbench.Row, sum *microbench.Summary, ref string) *Validate {
	d := &Validate{Header: h, Rows: []map[string]any{}, Summary: sum, ref: ref, rows: rows}
	for _, r := range rows {
		item := map[string]any{"experiment": r.Experiment, "case": r.Case, "metric": r.Metric, "unit": r.Unit,
			ref: nil, "model": r.Model, "rel_err": nil}
		if r.HasPaper() {
			item[ref] = r.Paper
			if e := r.RelErr(); !math.IsNaN(e) {
				item["rel_err"] = e
			}
		}
		d.Rows = append(d.Rows, item)
	}
	return d
}

// NewValidateRuns is the document of a user's runs of a suite's tests:
// validate's columns, then the binding cause and the suite's published
// figure of the same conditions (its column named suite).
func NewValidateRuns(h report.Header, rows []microbench.Row, extra []RunExtra, sum *microbench.Summary, suite string) *Validate {
	d := &Validate{Header: h, Rows: []map[string]any{}, Summary: sum, ref: "measured", rows: rows, extra: extra, suite: suite}
	num := func(v float64) any {
		if math.IsNaN(v) {
			return nil
		}
		return v
	}
	for i, r := range rows {
		d.Rows = append(d.Rows, map[string]any{"experiment": r.Experiment, "case": r.Case, "metric": r.Metric, "unit": r.Unit,
			"measured": r.Paper, "model": r.Model, "rel_err": num(r.RelErr()), "bound_by": extra[i].BoundBy,
			suite: num(extra[i].Published), suite + "_source": extra[i].PublishedSource, "source": r.Source})
	}
	return d
}

// table is the rows as the table and CSV show them; full precision
// for CSV, which carries them for further analysis.
func (d *Validate) table(full bool) *report.Table {
	num := report.Num
	if full {
		num = csvNum
	}
	if d.extra != nil {
		t := &report.Table{
			Columns: []string{"experiment", "case", "metric", "unit", "measured", "model", "rel_err", "bound_by", d.suite},
			Numeric: []bool{false, false, false, false, true, true, true, false, true},
		}
		for i, r := range d.rows {
			e := report.Pct(r.RelErr())
			if full {
				e = csvNum(r.RelErr())
			}
			t.Rows = append(t.Rows, []string{r.Experiment, r.Case, r.Metric, r.Unit, num(r.Paper), num(r.Model),
				e, d.extra[i].BoundBy, num(d.extra[i].Published)})
		}
		return t
	}
	t := &report.Table{
		Columns: []string{"experiment", "case", "metric", "unit", d.ref, "model", "rel_err"},
		Numeric: []bool{false, false, false, false, true, true, true},
	}
	for _, r := range d.rows {
		e := report.Pct(r.RelErr())
		if full {
			e = csvNum(r.RelErr())
		}
		t.Rows = append(t.Rows, []string{r.Experiment, r.Case, r.Metric, r.Unit, num(r.Paper), num(r.Model), e})
	}
	return t
}

// WriteText is the table format: the rows, then their summary.
func (d *Validate) WriteText(w io.Writer) error {
	if err := d.table(false).WriteText(w, &d.Header); err != nil {
		return err
	}
	sum := d.Summary
	if sum == nil || sum.Rows == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n%d rows with a %s value: median error %s, mean %s, max %s (%s)\n",
		sum.Rows, d.ref, report.Pct(sum.MedianErr), report.Pct(sum.MeanErr), report.Pct(sum.MaxErr), sum.Worst)
	return err
}

// WriteCSV is the csv format: the rows at full precision.
func (d *Validate) WriteCSV(w io.Writer) error {
	return d.table(true).WriteCSV(w, &d.Header)
}

// ValidateBand is the error band validate's plot draws around y = x.
const ValidateBand = 0.10

// Ref is the reference column the rows' figure reads: measured when the
// rows carry one, else paper.
func (d *Validate) Ref() string {
	if len(d.Rows) > 0 {
		if _, ok := d.Rows[0]["measured"]; ok {
			return "measured"
		}
	}
	return "paper"
}

// Figure is the model against the reference, log-log, one series per
// experiment.
func (d *Validate) Figure() plot.Figure {
	return validateFigure(d)
}
