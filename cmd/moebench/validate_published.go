package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"moebench/published"
	"moebench/results"
)

// validateSuite runs each configuration of a published suite, or with
// measured each of a user's runs of its tests in that file, as moebench
// run would (on the suite's platform profile unless --profile names
// another), and lines the model up against the figures: for a user's
// runs, with the suite's published figure of the same conditions where it
// has one, why a cluster's figure is not DeepEP's README's. Published
// figures are predictions only: nothing fitted reads them.
func validateSuite(suite published.Suite, measured string, prof profileFlags, profileGiven bool, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	var runs published.Runs
	if measured != "" {
		var err error
		if runs, err = published.ReadRuns(measured); err != nil {
			return fmt.Errorf("--measured: %w", err)
		}
	}
	spec := suite.Profile
	if profileGiven {
		spec = prof.spec
	}
	// Each run refuses a --set that its models do not read; the check of
	// validate's own experiments, which do not run here, does not apply.
	out.before = nil
	p, err := (&profileFlags{spec: spec, sets: prof.sets}).load()
	if err != nil {
		return err
	}
	h := header("validate", p, "")
	if measured == "" {
		preds, err := predict(suite.Rows, spec, prof.sets, func(r published.Row, args []string, err error) error {
			where := fmt.Sprintf("%s %s (moebench run %s)", r.Experiment, r.Case, strings.Join(args, " "))
			if errors.Is(err, errUsage) {
				return fmt.Errorf("%w: %s: %s", errUsage, where, message(err))
			}
			return fmt.Errorf("%s: %w", where, err)
		})
		if err != nil {
			return err
		}
		return emitValidate(out, stdout, suite.Validate(h, preds), suite.Name, plotPath, failAbove)
	}
	preds, err := predict(runs.Rows, spec, prof.sets, func(r published.Row, args []string, err error) error {
		// A --set the run does not read is the command line's fault; the
		// rest, the run's conditions as the file gives them.
		where := fmt.Sprintf("%s: %s %s (moebench run %s)", r.Source, r.Experiment, r.Case, strings.Join(args, " "))
		if errors.Is(err, errUsage) && strings.HasPrefix(message(err), "--set ") {
			return fmt.Errorf("%w: %s: %s", errUsage, where, message(err))
		}
		return fmt.Errorf("--measured: %s: %s", where, message(err))
	})
	if err != nil {
		return err
	}
	return emitValidate(out, stdout, suite.ValidateRuns(h, runs, measured, preds), "measured", plotPath, failAbove)
}

// predict predicts rows (published.Predict), each distinct configuration
// run once as moebench run on the profile spec with sets; fail words a
// run's error, given the row and the run's arguments.
func predict(rows []published.Row, spec string, sets []string, fail func(published.Row, []string, error) error) ([]published.Prediction, error) {
	return published.Predict(rows, func(r published.Row) (results.Run, error) {
		args := append(r.Args(), "--profile", spec, "--format", "json", "--progress=false")
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		res, err := runJSON(args)
		if err != nil {
			return res, fail(r, args, err)
		}
		return res, nil
	})
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
	return doc.One()
}
