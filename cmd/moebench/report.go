package main

import (
	"fmt"
	"io"
	"path/filepath"

	"moebench/internal/outfile"
	"moebench/results"
)

const reportExamples = `  moebench run --format json --out run.json && moebench report run.json --out report.html
  moebench report size.json sweep.json validate.json --out study.html --title "EP256 sizing"
`

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("report", "report RESULT.json... [flags]", reportExamples, stdout)
	out := fs.StringP("out", "o", "", "write the page to `FILE` (atomically) instead of stdout")
	title := fs.String("title", "moebench report", "the page's title")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: report: give one or more result JSON files (run, sweep, size, replay or validate with --format json)", errUsage)
	}
	if err := checkOut("--out", *out); err != nil {
		return err
	}
	if err := checkFiles([]outfile.Arg{{Name: "--out", Path: *out}}, outfile.Positional(fs.Args())); err != nil {
		return err
	}
	page := &results.Page{Title: *title}
	for _, path := range fs.Args() {
		data, err := results.ReadFile(path)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		s, err := results.NewSection(filepath.Base(path), data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		page.Sections = append(page.Sections, s)
	}
	o := outputFlags{out: *out}
	return o.emit(stdout, func(w io.Writer) error { return results.Render(w, "html", page) })
}
