package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"moebench/internal/inputfile"
	"moebench/microbench"
	"moebench/published"
	"moebench/results"
)

// maxRunsBytes bounds a file of DeepEP runs: each run is a layer to model,
// seconds at most; a megabyte is thousands of them.
const maxRunsBytes = 1 << 20

// validateRuns predicts each of a user's runs of DeepEP's tests (the file
// path) as moebench run on the suite's platform profile unless --profile
// names another, and prints each figure beside the model's, the model's
// binding cause, and the suite's published figure of the same conditions
// where it has one: why a cluster's figure is not DeepEP's README's.
func validateRuns(suite published.Suite, path string, prof profileFlags, profileGiven bool, out outputFlags, stdout io.Writer, failAbove float64, plotPath string) error {
	data, err := inputfile.ReadFile(path, "a file of DeepEP runs", maxRunsBytes)
	if err != nil {
		return fmt.Errorf("--measured: %w", err)
	}
	runs, err := published.ParseRuns(path, data)
	if err != nil {
		return fmt.Errorf("--measured: %w", err)
	}
	spec := suite.Profile
	if profileGiven {
		spec = prof.spec
	}
	out.before = nil // as validatePublished: each run checks the --set it reads
	p, err := (&profileFlags{spec: spec, sets: prof.sets}).load()
	if err != nil {
		return err
	}
	preds, err := predictRows(runs.Rows, spec, prof.sets, func(r published.Row, args []string, err error) error {
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
	rows := make([]microbench.Row, len(runs.Rows))
	extra := make([]results.RunExtra, len(runs.Rows))
	for i, r := range runs.Rows {
		rows[i] = microbench.Row{Experiment: r.Experiment, Case: r.Case, Metric: r.Phase + " " + r.Metric, Unit: r.Unit(),
			Paper: r.Value, Model: preds[i].model, Source: r.Source}
		extra[i] = results.RunExtra{BoundBy: preds[i].boundBy, Published: math.NaN()}
		if m, ok := suite.Match(r); ok {
			extra[i].Published, extra[i].PublishedSource = m.Value, m.Source
		}
	}
	sum := microbench.Summarize(rows)
	h := header("validate", p, "modelled vs runs of DeepEP's tests in "+path)
	if runs.Platform != "" {
		// A note of the file's, bounded to a header line.
		note := []rune(runs.Platform)
		if len(note) > 160 {
			note = append(note[:159], '…')
		}
		h.Extra = append(h.Extra, "measured on "+strconv.Quote(string(note)))
	}
	h.Extra = append(h.Extra, "each row is moebench run with the run's conditions; column "+suite.Name+": the figure of the same conditions among "+suite.Description+", where there is one")
	return emitValidate(out, stdout, results.NewValidateRuns(h, rows, extra, &sum, suite.Name), "measured", plotPath, failAbove)
}
