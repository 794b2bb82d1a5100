package main

import (
	"fmt"
	"io"

	"moebench/internal/plot"
	"moebench/results"
)

// checkPlotPath fails early on a --plot file moebench cannot write.
func checkPlotPath(flag, path string) error {
	if path == "" {
		return nil
	}
	if _, err := plot.FormatOf(path); err != nil {
		return fmt.Errorf("%w: %s %v", errUsage, flag, err)
	}
	return checkOut(flag, path)
}

// checkFigure refuses a document's figure with nothing to draw, before
// any output is written: an empty chart would read as a result. It is the
// study's or the input's failure (exit 1), not the command line's; why
// says what left the figure empty.
func checkFigure(path string, d results.Plotter, why string) error {
	if path == "" {
		return nil
	}
	if t := d.Figure().Empty(); t != "" {
		return fmt.Errorf("--plot %s: nothing to draw in %q: %s; no plot written", path, t, why)
	}
	return nil
}

// plotDoc is a document the plot formats draw.
type plotDoc interface {
	results.Document
	results.Plotter
}

// writePlot draws d's figure to path in the format its extension names,
// atomically (held for commit after hold); a figure with nothing to draw
// is refused (see checkFigure).
func (o *outputFlags) writePlot(path string, d plotDoc) error {
	format, err := plot.FormatOf(path)
	if err != nil {
		return fmt.Errorf("%w: --plot %v", errUsage, err)
	}
	if err := checkFigure(path, d, "no point to draw"); err != nil {
		return err
	}
	r, err := results.NewReporter(format, d)
	if err != nil {
		return err
	}
	return o.Write(path, r)
}

// emitPlotted writes a result (render) and, when plotPath is given, d's
// figure there: both or neither (d may be nil without plotPath). A figure with nothing to draw is refused
// first (why says what left it empty), and check, when given, may refuse
// the result once it is rendered, before any file is written.
func (o *outputFlags) emitPlotted(stdout io.Writer, render func(io.Writer) error, plotPath string, d plotDoc, why string, check func() error) error {
	if err := checkFigure(plotPath, d, why); err != nil {
		return err
	}
	o.Hold()
	defer o.Discard()
	if err := o.emit(stdout, render); err != nil {
		return err
	}
	if plotPath != "" {
		if err := o.writePlot(plotPath, d); err != nil {
			return err
		}
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	return o.Commit()
}
