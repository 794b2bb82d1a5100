package results

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"

	"moebench/internal/plot"
	"moebench/moe"
	"moebench/sizing"
	"moebench/transport"
)

// runFigure is the critical path of each transport and phase, stacked by
// cause.
func runFigure(d *Layer) plot.Figure {
	st := &plot.Stacks{}
	for i := range d.Results {
		for _, ph := range d.Results[i].phases() {
			st.Groups = append(st.Groups, d.Results[i].Preset+"\n"+ph.name)
		}
	}
	for _, c := range moe.CauseNames() {
		l := plot.Layer{Name: strings.ReplaceAll(c, "_", " ")}
		for _, r := range d.Results {
			l.Values = append(l.Values, r.Dispatch.Breakdown[c], r.Combine.Breakdown[c])
		}
		st.Layers = append(st.Layers, l)
	}
	return plot.Figure{Width: vg.Length(max(5.5, 0.8*float64(len(st.Groups))+2.5)) * vg.Inch, Panels: []plot.Panel{{
		Title:  "Critical path by cause (modelled)",
		XLabel: "transport and phase", YLabel: "time on the critical path, µs (mean over ranks)",
		Stacks: st,
	}}}
}

// KnobOrder is the order sweep lists its swept knobs in: the workload's,
// the mechanisms' as they declare them, the background; --set constants
// follow, by name.
func KnobOrder() []string {
	o := []string{"ranks", "gpus/node", "tokens", "experts", "mode"}
	for _, k := range transport.AllKnobs() {
		o = append(o, k.Column)
	}
	return append(o, "background")
}

// knobLabel is a swept knob's axis label.
func knobLabel(column string) string {
	for _, k := range transport.AllKnobs() {
		if k.Column == column {
			return k.Label
		}
	}
	return map[string]string{
		"ranks": "expert-parallel ranks (GPUs)", "gpus/node": "GPUs per node", "tokens": "tokens per rank", "experts": "experts",
		"mode": "DeepEP mode", "background": "background traffic",
	}[column]
}

// sweptKnobs are the knobs the runs sweep, in KnobOrder, then the
// others by name.
func sweptKnobs(runs []Run) []string {
	var knobs []string
	seen := map[string]bool{}
	for _, r := range runs {
		for k := range r.Knobs {
			seen[k] = true
		}
	}
	for _, k := range KnobOrder() {
		if seen[k] {
			knobs = append(knobs, k)
			delete(seen, k)
		}
	}
	var rest []string
	for k := range seen {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(knobs, rest...)
}

func layerUs(r *Run) float64 { return r.Dispatch.MeanUs + r.Combine.MeanUs }

// sweepFigure is the layer time against the first swept knob, one series
// per preset (and value of the other swept knobs).
func sweepFigure(d *Layer) plot.Figure {
	knobs := sweptKnobs(d.Results)
	pn := plot.Panel{Title: "Layer time (modelled)", YLabel: "dispatch + combine, µs (mean over ranks)"}
	if len(knobs) == 0 {
		// Only presets vary: one bar-like point per preset.
		s := plot.Series{Name: "layer", Points: true}
		for i, r := range d.Results {
			pn.XCategories = append(pn.XCategories, r.Preset)
			s.X, s.Y = append(s.X, float64(i)), append(s.Y, layerUs(&r))
		}
		pn.XLabel, pn.Series = "preset", []plot.Series{s}
		return plot.Figure{Panels: []plot.Panel{pn}}
	}
	x := knobs[0]
	pn.XLabel = knobLabel(x)
	if pn.XLabel == "" {
		pn.XLabel = x + " (profile constant)"
	}
	numeric := true
	var cats []string
	for _, r := range d.Results {
		v := r.Knobs[x]
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			numeric = false
		}
		if !slices.Contains(cats, v) {
			cats = append(cats, v)
		}
	}
	series := map[string]*plot.Series{}
	var order []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range d.Results {
		name := r.Preset
		for _, k := range knobs[1:] {
			name += fmt.Sprintf(", %s=%s", k, r.Knobs[k])
		}
		s := series[name]
		if s == nil {
			s = &plot.Series{Name: name, Line: true, Points: true}
			series[name] = s
			order = append(order, name)
		}
		xv := float64(slices.Index(cats, r.Knobs[x]))
		if numeric {
			xv, _ = strconv.ParseFloat(r.Knobs[x], 64)
			lo, hi = min(lo, xv), max(hi, xv)
		}
		s.X, s.Y = append(s.X, xv), append(s.Y, layerUs(&r))
	}
	if !numeric {
		pn.XCategories = cats
	} else if lo > 0 && hi/lo >= 8 {
		pn.XLog = true
	} else {
		pn.XInteger = slices.IndexFunc(d.Results, func(r Run) bool {
			v, _ := strconv.ParseFloat(r.Knobs[x], 64)
			return v != math.Trunc(v)
		}) < 0
	}
	for _, n := range order {
		pn.Series = append(pn.Series, *series[n])
	}
	return plot.Figure{Panels: []plot.Panel{pn}}
}

// replayFigure is each layer's time over the replay, per preset, and what
// each rank received.
func replayFigure(d *Replay) plot.Figure {
	at := map[[2]int]int{}
	series := map[string]*plot.Series{}
	var order []string
	for _, l := range d.Layers {
		k := [2]int{l.Step, l.Layer}
		i, ok := at[k]
		if !ok {
			i = len(at)
			at[k] = i
		}
		s := series[l.Preset]
		if s == nil {
			s = &plot.Series{Name: l.Preset, Line: true, Points: len(d.Layers) <= 200}
			series[l.Preset] = s
			order = append(order, l.Preset)
		}
		s.X, s.Y = append(s.X, float64(i)), append(s.Y, l.Dispatch.MaxUs+l.Combine.MaxUs)
	}
	time := plot.Panel{Title: "Per-layer time over the replay (modelled)", XLabel: "layer, in replay order (step-major)",
		YLabel: "dispatch + combine, µs (slowest rank)", XInteger: true}
	for _, n := range order {
		time.Series = append(time.Series, *series[n])
	}
	load := plot.Panel{Title: "Per-rank load", XLabel: "rank", YLabel: "selections received over the replay", XInteger: true, YInteger: true}
	recv := plot.Series{Name: "received", Line: true, Points: len(d.Aggregate.Load.PerRank.Selections) <= 64}
	for r, n := range d.Aggregate.Load.PerRank.Selections {
		recv.X, recv.Y = append(recv.X, float64(r)), append(recv.Y, float64(n))
	}
	load.Series = []plot.Series{recv}
	if n := len(recv.X); n > 0 {
		mean := plot.Series{Name: "mean", Line: true, X: []float64{0, float64(n - 1)}}
		m := d.Aggregate.Load.PerRank.Total.Mean
		mean.Y = []float64{m, m}
		load.Series = append(load.Series, mean)
	}
	return plot.Figure{Panels: []plot.Panel{time, load}}
}

// Figure is replay's plot: each layer's time and the load per rank.
func (d *Replay) Figure() plot.Figure { return replayFigure(d) }

// validateFigure is the model against the reference, log-log, one series
// per experiment.
func validateFigure(d *Validate) plot.Figure {
	ref := d.Ref()
	series := map[string]*plot.Series{}
	var order []string
	for _, r := range d.Rows {
		rv, ok1 := r[ref].(float64)
		mv, ok2 := r["model"].(float64)
		exp, _ := r["experiment"].(string)
		// A row without a figure has none to place (null in the JSON).
		if !ok1 || !ok2 || math.IsNaN(rv) || math.IsNaN(mv) {
			continue
		}
		s := series[exp]
		if s == nil {
			s = &plot.Series{Name: exp, Points: true}
			series[exp] = s
			order = append(order, exp)
		}
		s.X, s.Y = append(s.X, rv), append(s.Y, mv)
	}
	pn := plot.Panel{Title: "Model against the " + ref + " (every row in its own unit)", XLog: true, YLog: true,
		XLabel: ref + " value (µs, M msg/s, GB/s, … per row)", YLabel: "modelled value (same unit)", Identity: &plot.Identity{Band: ValidateBand}}
	for _, n := range order {
		pn.Series = append(pn.Series, *series[n])
	}
	return plot.Figure{Panels: []plot.Panel{pn}}
}

// sizeFigure is the Pareto front: each modelled candidate's layer time
// against its QPs per NIC, the front and the recommendation marked.
func sizeFigure(res *sizing.Result) plot.Figure {
	pn := plot.Panel{Title: "Sizing: layer time against queues per NIC (modelled)", XLog: true, LegendBottom: true,
		XLabel: "QPs per NIC (DCIs for DC; proxy: workers × peers)", YLabel: "layer µs (slowest rank)"}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range res.Candidates {
		if c.Figures != nil {
			lo, hi = min(lo, c.Figures.LayerUs), max(hi, c.Figures.LayerUs)
		}
	}
	pn.YLog = lo > 0 && hi/lo >= 4
	byMech := map[string]*plot.Series{}
	var order []string
	front := plot.Series{Name: "Pareto front", Points: true, Emphasis: true}
	rec := plot.Series{Name: "recommended", Points: true, Emphasis: true}
	for _, c := range res.Candidates {
		if c.Figures == nil {
			continue
		}
		x, y := float64(c.Resources.QPsPerNIC), c.Figures.LayerUs
		switch c.Verdict {
		case sizing.Recommended:
			rec.X, rec.Y, rec.Labels = []float64{x}, []float64{y}, []string{c.Name}
			continue
		case sizing.Front:
			front.X, front.Y, front.Labels = append(front.X, x), append(front.Y, y), append(front.Labels, c.Name)
			continue
		}
		name := c.Transport + " (" + c.Verdict + ")"
		s := byMech[name]
		if s == nil {
			s = &plot.Series{Name: name, Points: true}
			byMech[name] = s
			order = append(order, name)
		}
		s.X, s.Y = append(s.X, x), append(s.Y, y)
	}
	sort.Strings(order)
	for _, n := range order {
		pn.Series = append(pn.Series, *byMech[n])
	}
	if len(front.X) > 0 {
		pn.Series = append(pn.Series, front)
	}
	if len(rec.X) > 0 {
		pn.Series = append(pn.Series, rec)
	}
	return plot.Figure{Panels: []plot.Panel{pn}}
}
