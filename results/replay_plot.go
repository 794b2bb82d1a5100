package results

import (
	"moebench/internal/report"
	"moebench/replay"
)

// ReplayPlot passes a replay through to its sink and keeps what the plot
// draws: each layer's slowest-rank time per preset and, at the end, the
// aggregate load.
type ReplayPlot struct {
	replay.Sink
	Doc Replay
}

func (p *ReplayPlot) Group(g *replay.Group) error {
	for _, r := range g.Runs {
		l := ReplayLayer{Step: g.Step, Layer: g.Layer, Preset: r.Preset.Name, Transport: r.Preset.Mechanism}
		l.Dispatch.MaxUs, l.Combine.MaxUs = r.Result.Dispatch.Time.Max, r.Result.Combine.Time.Max
		p.Doc.Layers = append(p.Doc.Layers, l)
	}
	return p.Sink.Group(g)
}

func (p *ReplayPlot) End(a *replay.Aggregate) error {
	p.Doc.Aggregate = AggregateOf(a)
	return p.Sink.End(a)
}

// NewReplayPlot wraps sink, keeping what the plot draws; h heads its
// document.
func NewReplayPlot(sink replay.Sink, h report.Header) *ReplayPlot {
	return &ReplayPlot{Sink: sink, Doc: Replay{Header: h}}
}
