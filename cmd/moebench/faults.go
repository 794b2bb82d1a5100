package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"moebench/fault"
	"moebench/internal/plot"
	"moebench/internal/report"
	"moebench/moe"
)

// faultFlags are the faults a layer runs under (run, sweep and replay),
// and sweep's tails over fault seeds. A layer that fails under its faults
// is a result, not an error: its phase's row says failed, the JSON holds
// the failure, stderr repeats it, and the exit status stays 0.
type faultFlags struct {
	specs            []string
	seed             uint64
	seeds            int       // sweep: fault seeds 1..seeds for every point
	loss             []float64 // sweep: packet loss on every link, an axis
	lossSet, seedSet bool
}

// maxSeeds bounds --seeds: a p99 wants about a hundred, and each seed is a
// full run of every point.
const maxSeeds = 10000

func (f *faultFlags) register(fs *pflag.FlagSet, sweep bool) {
	fs.StringArrayVar(&f.specs, "fault", nil, "a fault under the layer, `SPEC` (repeatable, or a comma list): "+fault.Syntax+
		"; loss and corrupt are per packet on one crossing of a link, slow makes one rank's kernels FACTOR times as long, link runs a rank's NIC links at FACTOR of their rate, flap takes them down AT for FOR, spine leaves FACTOR of the spine to the layer; a layer that fails under its faults is reported (its rows, a line on stderr, JSON failure) and exits 0")
	fs.Uint64Var(&f.seed, "fault-seed", 1, "seed of the faults' draws (which packets are lost): the same seed, the same run")
	if sweep {
		fs.IntVar(&f.seeds, "seeds", 0, "run every point with fault seeds 1..N and report, per point and phase, the p50, p99 and max over the seeds of the slowest rank's time, and how many seeds failed (needs --fault or --loss)")
		fs.Float64SliceVar(&f.loss, "loss", nil, "packet loss rates on every link to sweep, each with the --fault ones, e.g. 0,1e-5,1e-4")
	}
}

// check validates the flags once parsed: the specifications' syntax (the
// ranks they name are checked against each layer in expand).
func (f *faultFlags) check(fs *pflag.FlagSet) error {
	f.lossSet, f.seedSet = fs.Changed("loss"), fs.Changed("fault-seed")
	if _, err := fault.Parse(f.specs, f.seed); err != nil {
		return fmt.Errorf("%w: --fault: %v", errUsage, err)
	}
	for _, l := range f.loss {
		if math.IsNaN(l) || l < 0 || l >= 1 {
			return fmt.Errorf("%w: --loss %v: want a rate from 0 to below 1", errUsage, l)
		}
	}
	switch {
	case f.seeds < 0 || f.seeds > maxSeeds:
		return fmt.Errorf("%w: --seeds %d: want 1 to %d", errUsage, f.seeds, maxSeeds)
	case fs.Changed("seeds") && f.seeds == 0:
		return fmt.Errorf("%w: --seeds 0: want 1 to %d", errUsage, maxSeeds)
	case f.seeds > 0 && len(f.specs) == 0 && !f.lossSet:
		return fmt.Errorf("%w: --seeds: a healthy layer is deterministic, every seed the same; add --fault or --loss", errUsage)
	case f.seeds > 0 && fs.Changed("shard"):
		return fmt.Errorf("%w: --shard: tails over seeds are summed up in one process; run --seeds without --shard", errUsage)
	case f.seeds > 0 && f.seedSet:
		return fmt.Errorf("%w: --fault-seed: --seeds runs seeds 1 to %d; give one or the other", errUsage, f.seeds)
	}
	return nil
}

// faultPoint is one configuration's faults.
type faultPoint struct {
	plan *fault.Plan // nil when healthy
	loss string      // the --loss value, when swept
	// point numbers the (configuration, loss rate) pairs, which the seeds
	// then multiply: a point's seeds share it. seed is the fault seed, and
	// seeds how many there are (0 without --seeds).
	point, seeds int
	seed         uint64
}

// any reports whether a layer runs under faults.
func (f *faultFlags) any() bool { return len(f.specs) > 0 || f.lossSet }

// expand gives every configuration its faults: one per --loss rate, and
// with --seeds one per seed, innermost, so that a point's seeds run side
// by side. A fault naming a rank past a layer's is the command line's.
func (f *faultFlags) expand(configs []config) ([]config, error) {
	if !f.any() {
		return configs, nil
	}
	sw := fault.Sweep{Specs: f.specs, Seeds: []uint64{f.seed}}
	if f.lossSet {
		sw.Loss = append([]float64{}, f.loss...) // non-nil: swept, even if empty
	}
	if f.seeds > 0 {
		sw.Seeds = sw.Seeds[:0]
		for s := 1; s <= f.seeds; s++ {
			sw.Seeds = append(sw.Seeds, uint64(s))
		}
	}
	var out []config
	point := 0
	for _, c := range configs {
		vs, err := sw.Variants(c.shape.Ranks)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		for _, byLoss := range vs {
			for _, v := range byLoss {
				c.fault = faultPoint{plan: v.Plan, loss: v.Loss, point: point, seeds: f.seeds, seed: v.Seed}
				out = append(out, c)
			}
			point++
		}
	}
	return out, nil
}

// note is the header's account of the faults.
func (f *faultFlags) note() []string {
	if !f.any() {
		return nil
	}
	p, _ := fault.Parse(f.specs, f.seed)
	s := "faults " + p.String()
	if f.lossSet {
		var l []string
		for _, x := range f.loss {
			l = append(l, strconv.FormatFloat(x, 'g', -1, 64))
		}
		s += "; packet loss on every link swept over " + strings.Join(l, ", ")
	}
	if f.seeds > 0 {
		s += fmt.Sprintf("; fault seeds 1 to %d per point", f.seeds)
	} else {
		s += fmt.Sprintf("; fault seed %d", f.seed)
	}
	return []string{s}
}

// warnFailed tells stderr of each phase that failed under its faults.
func warnFailed(w io.Writer, command string, items []item) {
	for _, it := range items {
		for _, ph := range phases(it.res) {
			if fl := ph.p.Failure; fl != nil {
				fmt.Fprintf(w, "moebench %s: preset %s: the layer failed under its faults (%s): %s: %v\n",
					command, it.preset.Name, it.res.Faults, ph.name, fl)
			}
		}
	}
}

// --- tails over seeds ---

// tail is one point's figure over its seeds: the slowest rank's time of a
// phase, or of the layer (dispatch then combine), in each seed that
// completed.
type tail struct {
	Seeds  int     `json:"seeds"`
	Failed int     `json:"failed"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
}

// tailOf summarizes times over seeds; failed seeds have no time.
func tailOf(times []float64, failed int) tail {
	t := tail{Seeds: len(times) + failed, Failed: failed}
	if len(times) > 0 {
		s := moe.Summarize(times)
		t.P50Us, t.P99Us, t.MaxUs = s.P50, s.P99, s.Max
	}
	return t
}

// tailRow is one (point, preset) over its seeds.
type tailRow struct {
	Preset    string            `json:"preset"`
	Transport string            `json:"transport"`
	Mode      string            `json:"mode"`
	Ranks     int               `json:"ranks"`
	Knobs     map[string]string `json:"swept,omitempty"`
	Faults    string            `json:"faults"`
	Dispatch  tail              `json:"dispatch"`
	Combine   tail              `json:"combine"`
	Layer     tail              `json:"layer"`
	// Failures are the first failures, one per failed seed, up to a few.
	Failures []string `json:"failures,omitempty"`
	knobs    []knob
}

// maxFailures is how many failed seeds a tail row spells out.
const maxFailures = 3

// tailRows groups items by point and preset, in the items' order.
func tailRows(items []item) []tailRow {
	type key struct {
		point  int
		preset string
	}
	idx := map[key]int{}
	var rows []tailRow
	var d, c, l [][]float64
	var df, cf, lf []int
	for _, it := range items {
		k := key{it.cfg.fault.point, it.preset.Name}
		i, ok := idx[k]
		if !ok {
			i = len(rows)
			idx[k] = i
			fp := it.cfg.fault.plan
			if fp != nil {
				q := *fp
				q.Seed = 0
				fp = &q
			}
			faults := "none"
			if fp != nil {
				faults = fp.String()
			}
			rows = append(rows, tailRow{Preset: it.preset.Name, Transport: it.preset.Mechanism, Mode: it.res.Mode.String(),
				Ranks: it.res.Shape.Ranks, Faults: faults, knobs: it.knobs})
			if len(it.knobs) > 0 {
				rows[i].Knobs = map[string]string{}
				for _, kn := range it.knobs {
					rows[i].Knobs[kn.name] = kn.value
				}
			}
			d, c, l = append(d, nil), append(c, nil), append(l, nil)
			df, cf, lf = append(df, 0), append(cf, 0), append(lf, 0)
		}
		r := it.res
		if r.Dispatch.Failure != nil {
			df[i]++
		} else {
			d[i] = append(d[i], r.Dispatch.Time.Max)
		}
		if r.Combine.Failure != nil {
			cf[i]++
		} else {
			c[i] = append(c[i], r.Combine.Time.Max)
		}
		if phase, f := r.Failed(); f != nil {
			lf[i]++
			if len(rows[i].Failures) < maxFailures {
				rows[i].Failures = append(rows[i].Failures, fmt.Sprintf("seed %d: %s: %v", it.cfg.fault.seed, phase, f))
			}
		} else {
			l[i] = append(l[i], r.Dispatch.Time.Max+r.Combine.Time.Max)
		}
	}
	for i := range rows {
		rows[i].Dispatch, rows[i].Combine, rows[i].Layer = tailOf(d[i], df[i]), tailOf(c[i], cf[i]), tailOf(l[i], lf[i])
	}
	return rows
}

// renderTails renders sweep --seeds: per point, preset and phase the
// tails over the seeds.
func renderTails(w io.Writer, format string, h report.Header, items []item) error {
	rows := tailRows(items)
	if format == "json" {
		doc := struct {
			Header report.Header `json:"header"`
			Tails  []tailRow     `json:"tails"`
		}{h, rows}
		if doc.Tails == nil {
			doc.Tails = []tailRow{}
		}
		return report.WriteJSON(w, doc)
	}
	var kc []string
	if len(rows) > 0 {
		for _, k := range rows[0].knobs {
			kc = append(kc, k.name)
		}
	}
	t := &report.Table{Columns: append(slices.Clone(kc), "preset", "transport", "phase", "seeds", "failed", "p50 µs", "p99 µs", "max µs")}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, false, false, false, true, true, true, true, true)
	for _, r := range rows {
		for _, ph := range []struct {
			name string
			t    tail
		}{{"dispatch", r.Dispatch}, {"combine", r.Combine}, {"layer", r.Layer}} {
			row := []string{}
			for _, k := range r.knobs {
				row = append(row, k.value)
			}
			p50, p99, mx := "—", "—", "—"
			if ph.t.Failed < ph.t.Seeds {
				p50, p99, mx = report.Num(ph.t.P50Us), report.Num(ph.t.P99Us), report.Num(ph.t.MaxUs)
			}
			t.Rows = append(t.Rows, append(row, r.Preset, r.Transport, ph.name, strconv.Itoa(ph.t.Seeds), strconv.Itoa(ph.t.Failed), p50, p99, mx))
		}
	}
	if format == "csv" {
		return t.WriteCSV(w, &h)
	}
	if err := t.WriteText(w, &h); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\nTimes are the slowest rank's, over the seeds that completed; the layer is dispatch then combine, failed when either did.\n"); err != nil {
		return err
	}
	for _, r := range rows {
		for _, f := range r.Failures {
			if _, err := fmt.Fprintf(w, "! %s (%s): %s\n", r.Preset, r.Faults, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// tailsFigure draws the layer's p50 and p99 over seeds against the swept
// loss rate, one pair of series per preset (and per value of any other
// swept knob). Without --loss the first swept knob, else the preset, is
// the x axis.
func tailsFigure(items []item) plot.Figure {
	rows := tailRows(items)
	pn := plot.Panel{Title: "Layer time under faults (modelled)", YLabel: "dispatch + combine, µs (slowest rank, over fault seeds)", YLog: true}
	axis := ""
	if len(rows) > 0 && len(rows[0].knobs) > 0 {
		axis = rows[0].knobs[0].name
		for _, k := range rows[0].knobs {
			if k.name == "loss" {
				axis = "loss"
			}
		}
	}
	pn.XLabel = "preset"
	if axis == "loss" {
		pn.XLabel = "packet loss per link crossing"
	} else if axis != "" {
		pn.XLabel = axis
	}
	series := map[string]*plot.Series{}
	var order []string
	x := func(r tailRow) string {
		for _, k := range r.knobs {
			if k.name == axis {
				return k.value
			}
		}
		return r.Preset
	}
	for _, r := range rows {
		if r.Layer.Failed == r.Layer.Seeds {
			continue // no seed completed: nothing to draw
		}
		name := r.Preset
		for _, k := range r.knobs {
			if k.name != axis {
				name += fmt.Sprintf(", %s=%s", k.name, k.value)
			}
		}
		cat := x(r)
		ci := slices.Index(pn.XCategories, cat)
		if ci < 0 {
			ci = len(pn.XCategories)
			pn.XCategories = append(pn.XCategories, cat)
		}
		for _, q := range []struct {
			what string
			v    float64
		}{{"p50", r.Layer.P50Us}, {"p99", r.Layer.P99Us}} {
			n := name + " " + q.what
			s := series[n]
			if s == nil {
				s = &plot.Series{Name: n, Line: true, Points: true, Emphasis: q.what == "p99"}
				series[n] = s
				order = append(order, n)
			}
			s.X, s.Y = append(s.X, float64(ci)), append(s.Y, q.v)
		}
	}
	for _, n := range order {
		pn.Series = append(pn.Series, *series[n])
	}
	return plot.Figure{Panels: []plot.Panel{pn}}
}
