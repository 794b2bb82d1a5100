package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"moebench/internal/report"
	"moebench/internal/shard"
	"moebench/results"
	"moebench/sweep"
)

// layerExtras are run's and sweep's flags beyond the layer's own: a plot
// of the result and, for sweep, one shard of the points.
type layerExtras struct {
	plot      string
	shardFlag string
	shard     shard.Spec
	points    []int // the study's indices of the points this process ran
	study     string
}

func (x *layerExtras) register(fs *pflag.FlagSet, sweep bool) {
	if sweep {
		fs.StringVar(&x.shardFlag, "shard", "", "run one slice of the points: I/N, auto (a Slurm job array) or auto/N (Slurm or a Kubernetes Indexed Job); merge the JSON with moebench merge")
		fs.StringVar(&x.plot, "plot", "", "also draw the layer time against the first swept knob, one series per preset, to `FILE` (.svg or .png)")
		return
	}
	fs.StringVar(&x.plot, "plot", "", "also draw the critical path by cause, stacked per transport and phase, to `FILE` (.svg or .png)")
}

// check validates the flags once parsed.
func (x *layerExtras) check(fs *pflag.FlagSet, format string) error {
	x.study = shard.StudyPrint(fs)
	if err := checkPlotPath("--plot", x.plot); err != nil {
		return err
	}
	var err error
	x.shard, err = parseShard(x.shardFlag, format, x.plot, "plot the merged result (moebench merge ... --plot) rather than one shard")
	return err
}

// parseShard reads --shard's slice of a study: a shard is JSON for
// merge, and draws no --plot (noPlot says why).
func parseShard(spec, format, plot, noPlot string) (shard.Spec, error) {
	sh, err := shard.Parse(spec, os.Getenv)
	if err != nil {
		return sh, fmt.Errorf("%w: %w", errUsage, err)
	}
	if !sh.All() && format != "json" {
		return sh, fmt.Errorf("%w: --shard: a shard is written as JSON for moebench merge; add --format json", errUsage)
	}
	if !sh.All() && plot != "" {
		return sh, fmt.Errorf("%w: --plot: %s", errUsage, noPlot)
	}
	return sh, nil
}

// emit renders the result (a shard's slice as JSON) and draws the plot.
func (x *layerExtras) emit(o *outputFlags, stdout io.Writer, h report.Header, workload string, items []sweep.Item, total int) error {
	if !x.shard.All() {
		doc := sweep.LayerDoc(h, workload, items)
		sh := &results.LayerShard{Header: h, Results: doc.Results,
			Shard: shard.Info{Index: x.shard.Index, Count: x.shard.Count, Total: total, Points: x.points, Study: x.study}}
		return o.emit(stdout, func(w io.Writer) error { return results.Render(w, "json", sh) })
	}
	doc := sweep.Doc(h, workload, items)
	if k, ok := stdout.(*keptDoc); ok && !o.outFile() {
		// Through emit all the same: its check of the finished work
		// (a --set nothing read) still refuses it.
		return o.emit(k, func(io.Writer) error { k.doc = doc; return nil })
	}
	return o.emitPlotted(stdout, func(w io.Writer) error { return results.Render(w, o.format, doc) }, x.plot, doc, "no run has a time to draw", nil)
}

// keptDoc stands for stdout when a command runs in-process for its
// result (validate's predictions): emit hands it the document rather
// than a rendering to read back.
type keptDoc struct {
	io.Writer
	doc results.Document
}

// outFile reports whether the result goes to a file rather than stdout.
func (o *outputFlags) outFile() bool { return o.out != "" && o.out != "-" }
