package main

import (
	"fmt"
	"slices"
	"strings"

	"moebench/internal/outfile"
	"moebench/internal/report"
)

// formats are the --format names of the result commands, each a
// reporter's in results: a new output format is its file there and its
// name here.
var formats = []string{"table", "json", "csv"}

// checkFormat validates a --format value.
func checkFormat(f string) error {
	if slices.Contains(formats, f) {
		return nil
	}
	return fmt.Errorf("--format %s: want one of %s", report.Quote(f), strings.Join(formats, ", "))
}

// checkFiles refuses, before any work, an output that is one of the
// command's inputs or another of its outputs (outfile.Check): the command
// line's fault.
func checkFiles(outs, ins []outfile.Arg) error {
	if err := outfile.Check(outs, ins); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// profileArgs are the files among a profile list's entries (the others
// are built-in names).
func profileArgs(flag, spec string) []outfile.Arg {
	return outfile.Existing(flag, splitList([]string{spec}))
}

// outputs are the files the command writes, --out and more (--plot),
// for checkFiles; they are kept for checkInputs.
func (o *outputFlags) outputs(more ...outfile.Arg) []outfile.Arg {
	o.Outs = append([]outfile.Arg{{Name: "--out", Path: o.out}}, more...)
	return o.Outs
}

// checkInputs refuses inputs found after the flags were checked (a
// profile's bases) that are one of the outputs.
func (o *outputFlags) checkInputs(ins []outfile.Arg) error {
	return checkFiles(o.Outs, ins)
}

// outputs are calibrate's files: the fragment and the raw measurements.
func (o calibrateOptions) outputs() []outfile.Arg {
	return []outfile.Arg{{Name: "--out", Path: o.out}, {Name: "--raw", Path: o.raw}}
}
