package published

import (
	"math"
	"strconv"
	"strings"

	"moebench/internal/inputfile"
	"moebench/internal/report"
	"moebench/microbench"
	"moebench/results"
)

// Prediction is the model's figure for a row and what binds its phase.
type Prediction struct {
	Model   float64
	BoundBy string
}

// Predict predicts each row from a run of the layer: run is called once
// for each distinct configuration (the rows' Args), with the first row of
// it, and each row reads its phase's metric from that run.
func Predict(rows []Row, run func(Row) (results.Run, error)) ([]Prediction, error) {
	runs := map[string]results.Run{}
	preds := make([]Prediction, 0, len(rows))
	for _, r := range rows {
		key := strings.Join(r.Args(), " ")
		res, ok := runs[key]
		if !ok {
			var err error
			if res, err = run(r); err != nil {
				return nil, err
			}
			runs[key] = res
		}
		ph := res.Dispatch
		if r.Phase == "combine" {
			ph = res.Combine
		}
		model := math.NaN()
		switch r.Metric {
		case MeanUs:
			model = ph.MeanUs
		case DeepEPGBps:
			model = ph.DeepEPGBps
		case NVLinkGBps:
			model = ph.NVLinkGBps
		}
		preds = append(preds, Prediction{Model: model, BoundBy: ph.BoundBy})
	}
	return preds, nil
}

// Validate is validate's document of the suite's rows beside preds
// (Predict of s.Rows), under h: each case names the model's binding
// cause, the row-by-row answer to why a figure differs.
func (s Suite) Validate(h report.Header, preds []Prediction) *results.Validate {
	rows := make([]microbench.Row, len(s.Rows))
	for i, r := range s.Rows {
		rows[i] = microbench.Row{Experiment: r.Experiment, Case: r.Case + ", bound by " + preds[i].BoundBy,
			Metric: r.Phase + " " + r.Metric, Unit: r.Unit(), Paper: r.Value, Model: preds[i].Model, Source: r.Source}
	}
	sum := microbench.Summarize(rows)
	h.Figures = "modelled vs " + s.Description
	h.Extra = append(h.Extra, "published figures are predictions here: no constant is fitted to them; each row is moebench run with the suite's flags")
	return results.NewValidate(h, rows, &sum, s.Name)
}

// ValidateRuns is validate's document of a user's runs, read from path,
// beside preds (Predict of runs.Rows), under h: each row with the model's
// binding cause and the suite's figure of the same conditions, where it
// has one.
func (s Suite) ValidateRuns(h report.Header, runs Runs, path string, preds []Prediction) *results.Validate {
	rows := make([]microbench.Row, len(runs.Rows))
	extra := make([]results.RunExtra, len(runs.Rows))
	for i, r := range runs.Rows {
		rows[i] = microbench.Row{Experiment: r.Experiment, Case: r.Case, Metric: r.Phase + " " + r.Metric, Unit: r.Unit(),
			Paper: r.Value, Model: preds[i].Model, Source: r.Source}
		extra[i] = results.RunExtra{BoundBy: preds[i].BoundBy, Published: math.NaN()}
		if m, ok := s.Match(r); ok {
			extra[i].Published, extra[i].PublishedSource = m.Value, m.Source
		}
	}
	sum := microbench.Summarize(rows)
	h.Figures = "modelled vs runs of DeepEP's tests in " + path
	if runs.Platform != "" {
		// A note of the file's, bounded to a header line.
		note := []rune(runs.Platform)
		if len(note) > 160 {
			note = append(note[:159], '…')
		}
		h.Extra = append(h.Extra, "measured on "+strconv.Quote(string(note)))
	}
	h.Extra = append(h.Extra, "each row is moebench run with the run's conditions; column "+s.Name+": the figure of the same conditions among "+s.Description+", where there is one")
	return results.NewValidateRuns(h, rows, extra, &sum, s.Name)
}

// maxRunsBytes bounds a file of runs: each run is a layer to model,
// seconds at most; a megabyte is thousands of them.
const maxRunsBytes = 1 << 20

// ReadRuns reads a file of a user's runs of DeepEP's tests (ParseRuns),
// refusing one past a bound.
func ReadRuns(path string) (Runs, error) {
	data, err := inputfile.ReadFile(path, "a file of DeepEP runs", maxRunsBytes)
	if err != nil {
		return Runs{}, err
	}
	runs, err := ParseRuns(path, data)
	if err != nil {
		return Runs{}, err
	}
	return runs, nil
}
