package main

import (
	"errors"
	"fmt"
	"io"

	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/profile"
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
	t := &report.Table{}
	var doc any
	switch {
	case list:
		t.Columns = []string{"name", "unit", "min", "max", "meaning"}
		t.Numeric = []bool{false, false, true, true, false}
		defs := profile.Defs()
		for _, d := range defs {
			t.Rows = append(t.Rows, []string{d.Name, d.Unit, report.Num(d.Min), report.Num(d.Max), d.Doc})
		}
		doc = defs
	case fs.NArg() == 0:
		t.Columns = []string{"profile", "base", "description"}
		var all []map[string]string
		for _, n := range profile.Builtins() {
			p, err := profile.Load(n)
			if err != nil {
				return fmt.Errorf("built-in profile %s: %w", n, err)
			}
			t.Rows = append(t.Rows, []string{n, p.Base, p.Description})
			all = append(all, map[string]string{"name": n, "base": p.Base, "description": p.Description})
		}
		doc = all
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
		// Each constant says what kind of source its value rests on and,
		// where a base profile set it, which; JSON carries the same as
		// each constant's kind and from.
		t.Columns = []string{"name", "value", "unit", "kind", "inherited_from", "source"}
		t.Numeric = []bool{false, true, false, false, false, false}
		cs := p.Constants()
		for _, c := range cs {
			t.Rows = append(t.Rows, []string{c.Name, fmt.Sprintf("%g", c.Value), c.Unit, c.Kind.String(), p.InheritedFrom(c.Name), c.Source})
		}
		doc = profile.File{Name: p.Name, Description: p.Description, Constants: cs}
	default:
		return fmt.Errorf("%w: profile takes at most one profile (got %s)", errUsage, quoteArgs(fs.Args()))
	}
	return out.emit(stdout, func(w io.Writer) error {
		switch out.format {
		case "json":
			return report.WriteJSON(w, doc)
		case "csv":
			return t.WriteCSV(w, nil)
		}
		return t.WriteText(w, nil)
	})
}
