package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"moebench/internal/report"
)

// layerExtras are run's and sweep's flags beyond the layer's own: a plot
// of the result and, for sweep, one shard of the points.
type layerExtras struct {
	sweep     bool
	plot      string
	shardFlag string
	shard     shardSpec
	points    []int // the study's indices of the points this process ran
	study     string
}

func (x *layerExtras) register(fs *pflag.FlagSet, sweep bool) {
	x.sweep = sweep
	if sweep {
		fs.StringVar(&x.shardFlag, "shard", "", "run one slice of the points: I/N, auto (a Slurm job array) or auto/N (Slurm or a Kubernetes Indexed Job); merge the JSON with moebench merge")
		fs.StringVar(&x.plot, "plot", "", "also draw the layer time against the first swept knob, one series per preset, to `FILE` (.svg or .png)")
		return
	}
	fs.StringVar(&x.plot, "plot", "", "also draw the critical path by cause, stacked per transport and phase, to `FILE` (.svg or .png)")
}

// check validates the flags once parsed.
func (x *layerExtras) check(fs *pflag.FlagSet, format string) error {
	x.study = studyPrint(fs)
	if err := checkPlotPath("--plot", x.plot); err != nil {
		return err
	}
	sh, err := parseShard(x.shardFlag, os.Getenv)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	x.shard = sh
	if !sh.all() && format != "json" {
		return fmt.Errorf("%w: --shard: a shard is written as JSON for moebench merge; add --format json", errUsage)
	}
	if !sh.all() && x.plot != "" {
		return fmt.Errorf("%w: --plot: plot the merged result (moebench merge ... --plot) rather than one shard", errUsage)
	}
	return nil
}

// take reports whether point i of the study runs here, and notes it.
func (x *layerExtras) take(i int) bool {
	if !x.shard.has(i) {
		return false
	}
	x.points = append(x.points, i)
	return true
}

// count is how many of total points run here.
func (x *layerExtras) count(total int) int {
	if x.shard.all() {
		return total
	}
	n := total / x.shard.count
	if x.shard.index < total%x.shard.count {
		n++
	}
	return n
}

// sweepShardDoc is one sweep shard's JSON: the unsharded document's
// header and results, with the shard's place in the study.
type sweepShardDoc struct {
	Header  json.RawMessage   `json:"header"`
	Shard   shardInfo         `json:"shard"`
	Results []json.RawMessage `json:"results"`
}

// emit renders the result (a shard's slice as JSON) and draws the plot.
func (x *layerExtras) emit(o *outputFlags, stdout io.Writer, h report.Header, items []item, total int) error {
	if !x.shard.all() {
		var doc sweepShardDoc
		if err := decodeVia(func(w io.Writer) error { return renderLayer(w, "json", h, items) }, &doc); err != nil {
			return err
		}
		doc.Shard = shardInfo{Index: x.shard.index, Count: x.shard.count, Total: total, Points: x.points, Study: x.study}
		if doc.Results == nil {
			doc.Results = []json.RawMessage{}
		}
		return o.emit(stdout, func(w io.Writer) error { return report.WriteJSON(w, doc) })
	}
	if err := o.emit(stdout, func(w io.Writer) error { return renderLayer(w, o.format, h, items) }); err != nil {
		return err
	}
	if x.plot == "" {
		return nil
	}
	var b bytes.Buffer
	if err := renderLayer(&b, "json", h, items); err != nil {
		return err
	}
	var doc layerDoc
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if x.sweep {
		return writePlot(x.plot, sweepFigure(&doc))
	}
	return writePlot(x.plot, runFigure(&doc))
}
