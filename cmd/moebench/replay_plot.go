package main

// replayPlot passes a replay through to its sink and keeps what the plot
// draws: each layer's slowest-rank time per preset and, at the end, the
// aggregate load.
type replayPlot struct {
	replaySink
	doc replayJSONDoc
}

func (p *replayPlot) group(g *groupResult) error {
	for _, r := range g.runs {
		l := jsonLayer{Step: g.step, Layer: g.layer, Preset: r.preset.Name, Transport: r.preset.Mechanism}
		l.Dispatch.MaxUs, l.Combine.MaxUs = r.res.Dispatch.Time.Max, r.res.Combine.Time.Max
		p.doc.Layers = append(p.doc.Layers, l)
	}
	return p.replaySink.group(g)
}

func (p *replayPlot) end(a *replayAgg) error {
	p.doc.Aggregate = aggregateJSON(a)
	return p.replaySink.end(a)
}

// teeReplayPlot wraps sink when a plot is asked for.
func teeReplayPlot(sink replaySink, path string, keep **replayPlot) replaySink {
	if path == "" {
		return sink
	}
	*keep = &replayPlot{replaySink: sink}
	return *keep
}
