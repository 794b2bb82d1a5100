package results

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"moebench/fault"
	"moebench/internal/plot"
	"moebench/internal/report"
	"moebench/moe"
)

// tail is one point's figure over its seeds: the slowest rank's time of a
// phase, or of the layer (dispatch then combine), in each seed that
// completed.
type Tail struct {
	Seeds  int     `json:"seeds"`
	Failed int     `json:"failed"`
	P50Us  float64 `json:"p50_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
}

// tailOf summarizes times over seeds; failed seeds have no time.
func tailOf(times []float64, failed int) Tail {
	t := Tail{Seeds: len(times) + failed, Failed: failed}
	if len(times) > 0 {
		s := moe.Summarize(times)
		t.P50Us, t.P99Us, t.MaxUs = s.P50, s.P99, s.Max
	}
	return t
}

// TailRow is one (point, preset) over its seeds.
type TailRow struct {
	Preset    string            `json:"preset"`
	Transport string            `json:"transport"`
	Mode      string            `json:"mode"`
	Ranks     int               `json:"ranks"`
	Knobs     map[string]string `json:"swept,omitempty"`
	Faults    string            `json:"faults"`
	Dispatch  Tail              `json:"dispatch"`
	Combine   Tail              `json:"combine"`
	Layer     Tail              `json:"layer"`
	// Failures are the first failures, one per failed seed, up to a few.
	Failures []string `json:"failures,omitempty"`
	// Swept are the swept knobs in their columns' order.
	Swept []Knob `json:"-"`
}

// maxFailures is how many failed seeds a tail row spells out.
const maxFailures = 3

// Seeded is one run of a sweep over fault seeds.
type Seeded struct {
	Point             int         // the sweep's point, its seeds apart
	Plan              *fault.Plan // the point's faults under its seed; nil when none
	Seed              uint64
	Preset, Mechanism string
	Result            *moe.Result
	Swept             []Knob
}

// Tails is sweep --seeds's document: per point and preset the tails of
// each phase and of the layer over the seeds.
type Tails struct {
	Header report.Header `json:"header"`
	Tails  []TailRow     `json:"tails"`
}

// Head is the document's header.
func (d *Tails) Head() report.Header { return d.Header }

// NewTails groups runs by point and preset, in the runs' order.
func NewTails(h report.Header, items []Seeded) *Tails {
	return &Tails{Header: h, Tails: tailRows(items)}
}

// tailRows groups items by point and preset, in the items' order.
func tailRows(items []Seeded) []TailRow {
	type key struct {
		point  int
		preset string
	}
	idx := map[key]int{}
	var rows []TailRow
	var d, c, l [][]float64
	var df, cf, lf []int
	for _, it := range items {
		k := key{it.Point, it.Preset}
		i, ok := idx[k]
		if !ok {
			i = len(rows)
			idx[k] = i
			fp := it.Plan
			if fp != nil {
				q := *fp
				q.Seed = 0
				fp = &q
			}
			faults := "none"
			if fp != nil {
				faults = fp.String()
			}
			rows = append(rows, TailRow{Preset: it.Preset, Transport: it.Mechanism, Mode: it.Result.Mode.String(),
				Ranks: it.Result.Shape.Ranks, Faults: faults, Swept: it.Swept, Knobs: knobMap(it.Swept)})
			d, c, l = append(d, nil), append(c, nil), append(l, nil)
			df, cf, lf = append(df, 0), append(cf, 0), append(lf, 0)
		}
		r := it.Result
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
				rows[i].Failures = append(rows[i].Failures, fmt.Sprintf("seed %d: %s: %v", it.Seed, phase, f))
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

// table is the tails, a row per point, preset and phase.
func (d *Tails) table() *report.Table {
	rows := d.Tails
	var kc []string
	if len(rows) > 0 {
		for _, k := range rows[0].Swept {
			kc = append(kc, k.Name)
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
			t    Tail
		}{{"dispatch", r.Dispatch}, {"combine", r.Combine}, {"layer", r.Layer}} {
			row := []string{}
			for _, k := range r.Swept {
				row = append(row, k.Value)
			}
			p50, p99, mx := "—", "—", "—"
			if ph.t.Failed < ph.t.Seeds {
				p50, p99, mx = report.Num(ph.t.P50Us), report.Num(ph.t.P99Us), report.Num(ph.t.MaxUs)
			}
			t.Rows = append(t.Rows, append(row, r.Preset, r.Transport, ph.name, strconv.Itoa(ph.t.Seeds), strconv.Itoa(ph.t.Failed), p50, p99, mx))
		}
	}
	return t
}

// WriteCSV is the csv format: a record per point, preset and phase.
func (d *Tails) WriteCSV(w io.Writer) error { return d.table().WriteCSV(w, &d.Header) }

// WriteText is the table format: the tails, then the failures of a few
// seeds of each point.
func (d *Tails) WriteText(w io.Writer) error {
	rows := d.Tails
	if err := d.table().WriteText(w, &d.Header); err != nil {
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

// Figure draws the layer's p50 and p99 over seeds against the swept
// loss rate, one pair of series per preset (and per value of any other
// swept knob). Without --loss the first swept knob, else the preset, is
// the x axis.
func (d *Tails) Figure() plot.Figure {
	rows := d.Tails
	pn := plot.Panel{Title: "Layer time under faults (modelled)", YLabel: "dispatch + combine, µs (slowest rank, over fault seeds)", YLog: true}
	axis := ""
	if len(rows) > 0 && len(rows[0].Swept) > 0 {
		axis = rows[0].Swept[0].Name
		for _, k := range rows[0].Swept {
			if k.Name == "loss" {
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
	x := func(r TailRow) string {
		for _, k := range r.Swept {
			if k.Name == axis {
				return k.Value
			}
		}
		return r.Preset
	}
	for _, r := range rows {
		if r.Layer.Failed == r.Layer.Seeds {
			continue // no seed completed: nothing to draw
		}
		name := r.Preset
		for _, k := range r.Swept {
			if k.Name != axis {
				name += fmt.Sprintf(", %s=%s", k.Name, k.Value)
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
