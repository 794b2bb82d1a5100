package main

import (
	"io"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/results"
)

// layerDoc is the document of a run or sweep's items.
func layerDoc(h report.Header, workload string, items []item) *results.Layer {
	d := &results.Layer{Header: h, Results: []results.Run{}}
	for _, it := range items {
		d.Results = append(d.Results, results.RunOf(it.res, results.RunInfo{
			Preset: it.preset.Name, Mechanism: it.preset.Mechanism, Workload: workload,
			QPsPerPeer: it.cfg.knobs.Int("qps-per-peer"), Background: it.cfg.bgName, Sets: it.cfg.sets,
			Settings: it.cfg.knobs, Swept: sweptOf(it.knobs), Limits: it.limits,
		}))
	}
	return d
}

// renderLayer renders a run or sweep in format: the runs, or with fault
// seeds the tails over them.
func renderLayer(w io.Writer, format string, h report.Header, workload string, items []item) error {
	if len(items) > 0 && items[0].cfg.fault.seeds > 0 {
		return renderTails(w, format, h, items)
	}
	return results.Render(w, format, layerDoc(h, workload, items))
}

func phases(r *moe.Result) []struct {
	name string
	p    *moe.Phase
} {
	return []struct {
		name string
		p    *moe.Phase
	}{{"dispatch", &r.Dispatch}, {"combine", &r.Combine}}
}
