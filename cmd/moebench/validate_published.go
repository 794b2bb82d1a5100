package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"moebench/microbench"
	"moebench/published"
	"moebench/results"
)

// validatePublished runs each configuration of a published suite as
// moebench run would (on the suite's platform profile unless --profile
// names another) and lines the result up against the published figure.
// These figures are predictions only: nothing fitted reads them.
func validatePublished(suite published.Suite, prof profileFlags, profileGiven bool, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	spec := suite.Profile
	if profileGiven {
		spec = prof.spec
	}
	// Each run refuses a --set that its models do not read; the check of
	// validate's own experiments, which do not run here, does not apply.
	out.before = nil
	pf := profileFlags{spec: spec, sets: prof.sets}
	p, err := pf.load()
	if err != nil {
		return err
	}
	preds, err := predictRows(suite.Rows, spec, prof.sets, func(r published.Row, args []string, err error) error {
		where := fmt.Sprintf("%s %s (moebench run %s)", r.Experiment, r.Case, strings.Join(args, " "))
		if errors.Is(err, errUsage) {
			return fmt.Errorf("%w: %s: %s", errUsage, where, message(err))
		}
		return fmt.Errorf("%s: %w", where, err)
	})
	if err != nil {
		return err
	}
	var rows []microbench.Row
	for i, r := range suite.Rows {
		// The case names the model's binding cause: the row-by-row answer
		// to why a figure differs.
		rows = append(rows, microbench.Row{Experiment: r.Experiment, Case: r.Case + ", bound by " + preds[i].boundBy,
			Metric: r.Phase + " " + r.Metric, Unit: r.Unit(), Paper: r.Value, Model: preds[i].model, Source: r.Source})
	}
	sum := microbench.Summarize(rows)
	h := header("validate", p, "modelled vs "+suite.Description)
	h.Extra = append(h.Extra, "published figures are predictions here: no constant is fitted to them; each row is moebench run with the suite's flags")
	return emitRows(out, stdout, h, rows, &sum, suite.Name, plotPath, failAbove)
}

// prediction is the model's figure for a row and what binds its phase.
type prediction struct {
	model   float64
	boundBy string
}

// predictRows runs each distinct configuration of rows once, as moebench
// run on the profile spec with sets, and returns each row's figure; fail
// words a run's error, given the row and the run's arguments.
func predictRows(rows []published.Row, spec string, sets []string, fail func(published.Row, []string, error) error) ([]prediction, error) {
	runs := map[string]results.Run{}
	var preds []prediction
	for _, r := range rows {
		key := strings.Join(r.Args(), " ")
		res, ok := runs[key]
		if !ok {
			args := append(r.Args(), "--profile", spec, "--format", "json", "--progress=false")
			for _, s := range sets {
				args = append(args, "--set", s)
			}
			var err error
			if res, err = runJSON(args); err != nil {
				return nil, fail(r, args, err)
			}
			runs[key] = res
		}
		ph := res.Dispatch
		if r.Phase == "combine" {
			ph = res.Combine
		}
		model := math.NaN()
		switch r.Metric {
		case published.MeanUs:
			model = ph.MeanUs
		case published.DeepEPGBps:
			model = ph.DeepEPGBps
		case published.NVLinkGBps:
			model = ph.NVLinkGBps
		}
		preds = append(preds, prediction{model: model, boundBy: ph.BoundBy})
	}
	return preds, nil
}

// runJSON runs moebench run with args and returns its one result.
func runJSON(args []string) (results.Run, error) {
	k := &keptDoc{Writer: io.Discard}
	if err := layerCommand("run", args, k, io.Discard); err != nil {
		return results.Run{}, err
	}
	doc, ok := k.doc.(*results.Layer)
	if !ok {
		return results.Run{}, fmt.Errorf("moebench run %s: no layer result", strings.Join(args, " "))
	}
	if len(doc.Results) != 1 {
		return results.Run{}, fmt.Errorf("%d results, want one", len(doc.Results))
	}
	if r := doc.Results[0]; !r.Correct {
		return results.Run{}, fmt.Errorf("the layer's checks failed: %v", r.Problems)
	}
	return doc.Results[0], nil
}
