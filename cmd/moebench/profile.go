package main

import (
	"errors"
	"fmt"
	"io"

	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/profile"
	"moebench/results"
)

const profileExamples = `  moebench profile                      # built-in profiles
  moebench profile p-ib                 # its constants, units, sources and their kinds
  moebench profile p-h800 --format csv  # which constants it inherits from p-h100 and p-ib
  moebench profile p-ib,my-gpu.json --set gpu.sm_clock_mhz=1500
  moebench profile --list               # every constant the model reads, with its range
`

func runProfile(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("profile", "profile [PROFILE] [flags]", profileExamples, stdout)
	var (
		out  outputFlags
		sets []string
		list bool
	)
	fs.BoolVar(&list, "list", false, "list the schema: every constant, its unit, range and meaning")
	fs.StringArrayVar(&sets, "set", nil, "override a constant, `name=value` (repeatable)")
	out.register(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := out.check(); err != nil {
		return err
	}
	if err := checkFiles(out.outputs(), profileArgs("", fs.Arg(0))); err != nil {
		return err
	}
	if len(sets) > 0 && (list || fs.NArg() != 1) {
		return fmt.Errorf("%w: --set: only with a profile to show (moebench profile NAME --set name=value)", errUsage)
	}
	var doc results.Document
	switch {
	case list:
		doc = results.ProfileSchema()
	case fs.NArg() == 0:
		d, err := results.ProfileBuiltins()
		if err != nil {
			return err
		}
		doc = d
	case fs.NArg() == 1:
		p, err := profile.Load(fs.Arg(0))
		if err != nil {
			if errors.Is(err, profile.ErrUnknownName) {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return err
		}
		if err := out.checkInputs(outfile.Existing("", p.Origins)); err != nil {
			return err
		}
		if err := p.ApplySets(sets); err != nil {
			return fmt.Errorf("%w: %w", errUsage, err)
		}
		doc = results.ProfileConstants(p)
	default:
		return fmt.Errorf("%w: profile takes at most one profile (got %s)", errUsage, report.QuoteArgs(fs.Args()))
	}
	return out.emit(stdout, func(w io.Writer) error { return results.Render(w, out.format, doc) })
}
