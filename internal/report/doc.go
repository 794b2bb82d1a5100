// Package report renders results accumulated by the commands: a header that
// identifies the run (tool version, profile, host processor, seed), tables
// with aligned columns, CSV and JSON from the same rows, a progress bar on
// stderr, and files written atomically so that a failed run leaves no
// half-written output.
package report
