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
			Settings: it.cfg.knobs, Swept: sweptOf(it.knobs), Limits: it.limits, Layers: it.layers,
		}))
	}
	return d
}

// renderLayer renders a run or sweep in format.
func renderLayer(w io.Writer, format string, h report.Header, workload string, items []item) error {
	return results.Render(w, format, resultDoc(h, workload, items))
}

// resultDoc is the document of a run or sweep: its runs, or with fault
// seeds the tails over them.
func resultDoc(h report.Header, workload string, items []item) plotDoc {
	if len(items) == 0 || items[0].cfg.fault.seeds == 0 {
		return layerDoc(h, workload, items)
	}
	var runs []results.Seeded
	for _, it := range items {
		runs = append(runs, results.Seeded{Point: it.cfg.fault.point, Plan: it.cfg.fault.plan, Seed: it.cfg.fault.seed,
			Preset: it.preset.Name, Mechanism: it.preset.Mechanism, Result: it.res, Swept: sweptOf(it.knobs)})
	}
	return results.NewTails(h, runs)
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
