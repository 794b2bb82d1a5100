package main

import (
	"io"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/results"
	"moebench/sweep"
)

// layerDoc is the document of a run or sweep's items.
func layerDoc(h report.Header, workload string, items []sweep.Item) *results.Layer {
	d := &results.Layer{Header: h, Results: []results.Run{}}
	for _, it := range items {
		d.Results = append(d.Results, results.RunOf(it.Result, results.RunInfo{
			Preset: it.Preset.Name, Mechanism: it.Preset.Mechanism, Workload: workload,
			QPsPerPeer: it.Point.Knobs.Int("qps-per-peer"), Background: it.Point.BackgroundName, Sets: it.Point.Sets,
			Settings: it.Point.Knobs, Swept: it.Swept, Limits: it.Limits, Layers: it.Layers,
		}))
	}
	return d
}

// renderLayer renders a run or sweep in format.
func renderLayer(w io.Writer, format string, h report.Header, workload string, items []sweep.Item) error {
	return results.Render(w, format, resultDoc(h, workload, items))
}

// resultDoc is the document of a run or sweep: its runs, or with fault
// seeds the tails over them.
func resultDoc(h report.Header, workload string, items []sweep.Item) plotDoc {
	if len(items) == 0 || items[0].Point.Fault.Seeds == 0 {
		return layerDoc(h, workload, items)
	}
	var runs []results.Seeded
	for _, it := range items {
		f := it.Point.Fault
		runs = append(runs, results.Seeded{Point: f.Point, Plan: f.Plan, Seed: f.Seed,
			Preset: it.Preset.Name, Mechanism: it.Preset.Mechanism, Result: it.Result, Swept: it.Swept})
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
