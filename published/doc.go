// Package published holds end-to-end results that expert-parallel
// libraries published for their own hardware: validation targets only.
//
// In: a user's own runs of DeepEP's tests, as a file (ParseRuns,
// ReadRuns). Out: Suites, each a list of Rows, each row a published figure
// with its source (repository, file, commit) and the Conditions of the
// moebench run that predicts it; a user's runs as Rows of the same kind,
// each with its file and line, and the suite's row of the same conditions
// (Suite.Match); the model's figure of each row from a run of its
// conditions (Predict), and validate's documents of the rows beside it
// (Suite.Validate, ValidateRuns); which reference a validation asks for
// (Choose: the paper, a measurement or a suite). The model's constants
// come from datasheets, the paper's microbenchmarks and native
// measurements; no fit may read these rows (a test in this package fails
// if any package but the CLI's validate imports it), so that a match is a
// prediction, not a fit.
package published
