package main

import (
	"io"

	"moebench/replay"
	"moebench/results"
)

// replaySink renders the replay in format as it runs and, when a plot is
// asked for, keeps what it draws.
func replaySink(w io.Writer, format string, rp *replayer, plotPath string) (replay.Sink, *results.ReplayPlot, error) {
	h := rp.header()
	names := make([]string, len(rp.presets))
	for i, p := range rp.presets {
		names[i] = p.Name
	}
	sink, err := results.NewReplaySink(w, format, h, results.ReplayTable{Steps: rp.h.Steps, Layers: rp.h.Layers, Presets: names})
	if err != nil || plotPath == "" {
		return sink, nil, err
	}
	pl := results.NewReplayPlot(sink, h)
	return pl, pl, nil
}
