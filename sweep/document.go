package sweep

import (
	"moebench/internal/report"
	"moebench/results"
)

// Document is a run or sweep's result: what the reporters render and
// the plot formats draw.
type Document interface {
	results.Document
	results.Plotter
}

// Info is what the results document says of the item's run beside its
// result: the preset, the workload, the point's knobs and settings.
func (it *Item) Info(workload string) results.RunInfo {
	return results.RunInfo{Preset: it.Preset.Name, Mechanism: it.Preset.Mechanism, Workload: workload,
		QPsPerPeer: it.Point.Knobs.Int("qps-per-peer"), Background: it.Point.BackgroundName, Sets: it.Point.Sets,
		Settings: it.Point.Knobs, Swept: it.Swept, Limits: it.Limits, Layers: it.Layers}
}

// LayerDoc is the document of items, one run each (a shard's slice
// included, seeds or not).
func LayerDoc(h report.Header, workload string, items []Item) *results.Layer {
	d := &results.Layer{Header: h, Results: []results.Run{}}
	for i := range items {
		d.Results = append(d.Results, results.RunOf(items[i].Result, items[i].Info(workload)))
	}
	return d
}

// Doc is the document of a run or sweep: its runs, or with fault seeds
// the tails over them (the points' runs under each seed, summarised).
func Doc(h report.Header, workload string, items []Item) Document {
	if len(items) == 0 || items[0].Point.Fault.Seeds == 0 {
		return LayerDoc(h, workload, items)
	}
	var runs []results.Seeded
	for _, it := range items {
		f := it.Point.Fault
		runs = append(runs, results.Seeded{Point: f.Point, Plan: f.Plan, Seed: f.Seed,
			Preset: it.Preset.Name, Mechanism: it.Preset.Mechanism, Result: it.Result, Swept: it.Swept})
	}
	return results.NewTails(h, runs)
}
