package main

import "moebench/replay"

// replayPlot passes a replay through to its sink and keeps what the plot
// draws: each layer's slowest-rank time per preset and, at the end, the
// aggregate load.
type replayPlot struct {
	replay.Sink
	doc replayJSONDoc
}

func (p *replayPlot) Group(g *replay.Group) error {
	for _, r := range g.Runs {
		l := jsonLayer{Step: g.Step, Layer: g.Layer, Preset: r.Preset.Name, Transport: r.Preset.Mechanism}
		l.Dispatch.MaxUs, l.Combine.MaxUs = r.Result.Dispatch.Time.Max, r.Result.Combine.Time.Max
		p.doc.Layers = append(p.doc.Layers, l)
	}
	return p.Sink.Group(g)
}

func (p *replayPlot) End(a *replay.Aggregate) error {
	p.doc.Aggregate = aggregateJSON(a)
	return p.Sink.End(a)
}

// teeReplayPlot wraps sink when a plot is asked for.
func teeReplayPlot(sink replay.Sink, path string, keep **replayPlot) replay.Sink {
	if path == "" {
		return sink
	}
	*keep = &replayPlot{Sink: sink}
	return *keep
}
