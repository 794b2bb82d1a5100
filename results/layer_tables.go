package results

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/transport"
)

// knobCols are the swept knobs' columns, the first run's.
func knobCols(runs []Run) []string {
	var c []string
	if len(runs) > 0 {
		for _, k := range runs[0].Swept {
			c = append(c, k.Name)
		}
	}
	return c
}

func knobVals(r *Run) []string {
	var v []string
	for _, k := range r.Swept {
		v = append(v, k.Value)
	}
	return v
}

// withKnobs is a table with the swept knobs' columns first.
func withKnobs(kc []string, cols []string, numeric []bool) *report.Table {
	t := &report.Table{Columns: append(slices.Clone(kc), cols...)}
	for range kc {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, numeric...)
	return t
}

func mainTable(runs []Run) *report.Table {
	t := withKnobs(knobCols(runs), []string{"preset", "transport", "phase", "mean µs", "p50 µs", "p99 µs", "max µs", "issue done µs", "algo GB/s", "DeepEP algo GB/s", "scale-out GB/s", "NVLink GB/s", "bound by"},
		[]bool{false, false, false, true, true, true, true, true, true, true, true, true, false})
	for i := range runs {
		r := &runs[i]
		for _, ph := range r.phases() {
			p := ph.p
			t.Rows = append(t.Rows, append(knobVals(r), r.Preset, r.Transport, ph.name,
				report.Num(p.MeanUs), report.Num(p.P50Us), report.Num(p.P99Us), report.Num(p.MaxUs),
				report.Num(p.IssueDoneUs), report.Num(p.AlgoGBps), report.Num(p.DeepEPGBps), report.Num(p.ScaleOutGBps), report.Num(p.NVLinkGBps), p.Bound()))
		}
	}
	return t
}

func breakdownTable(runs []Run) *report.Table {
	causes := moe.CauseNames()
	num := []bool{false, false}
	for range causes {
		num = append(num, true)
	}
	t := withKnobs(knobCols(runs), append([]string{"preset", "phase"}, causes...), num)
	for i := range runs {
		r := &runs[i]
		for _, ph := range r.phases() {
			row := append(knobVals(r), r.Preset, ph.name)
			for _, c := range causes {
				row = append(row, report.Num(ph.p.Breakdown[c]))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// heldNames are the kinds of resource the mechanisms named declare
// (transport.HeldBy), a report's columns beyond the common ones.
func heldNames(mechs []string) []string {
	n := []string{}
	for _, d := range transport.HeldBy(mechs) {
		n = append(n, d.Name)
	}
	return n
}

// ownNames are the kinds of resource the runs hold that their mechanisms
// do not declare, by name.
func ownNames(runs []Run, held []string) []string {
	var own []string
	for _, r := range runs {
		for k := range r.Resources.Own {
			if !slices.Contains(own, k) && !slices.Contains(held, k) {
				own = append(own, k)
			}
		}
	}
	slices.Sort(own)
	return own
}

func resourceTable(runs []Run) *report.Table {
	// The kinds the runs' mechanisms declare, after the connection
	// figures (0 where a transport holds none); any other a mechanism
	// holds, by name, after the memory.
	var mechs []string
	for _, r := range runs {
		mechs = append(mechs, r.Transport)
	}
	held := heldNames(mechs)
	own := ownNames(runs, held)
	t := withKnobs(knobCols(runs), []string{"preset", "QPs/NIC", "active conns/NIC", "knee", "queue MiB/rank", "buffer MiB/rank", "route hash", "correct"},
		[]bool{false, true, true, true, true, true, false, false})
	at := len(t.Columns) - 4 // before the queue memory
	t.Columns = slices.Insert(t.Columns, at, held...)
	for range held {
		t.Numeric = slices.Insert(t.Numeric, at, true)
	}
	at = len(t.Columns) - 2 // before the route hash
	t.Columns = slices.Insert(t.Columns, at, own...)
	for range own {
		t.Numeric = slices.Insert(t.Numeric, at, true)
	}
	for i := range runs {
		r := &runs[i]
		x := r.Resources
		knee := "—"
		if x.ConnKnee > 0 {
			knee = strconv.Itoa(x.ConnKnee)
		}
		ok := "yes"
		if !r.Correct {
			ok = fmt.Sprintf("NO (%d problems)", r.ProblemCount)
		}
		row := append(knobVals(r), r.Preset, strconv.Itoa(x.QPsPerNIC), strconv.Itoa(x.ActiveConnPerNIC), knee)
		for _, k := range held {
			row = append(row, strconv.Itoa(x.Own[k]))
		}
		row = append(row, report.Num(mib(x.QueueBytesPerRank)), report.Num(mib(x.BufferBytesPerRank)))
		for _, k := range own {
			v := "—"
			if n, ok := x.Own[k]; ok {
				v = strconv.Itoa(n)
			}
			row = append(row, v)
		}
		t.Rows = append(t.Rows, append(row, r.RouteHash, ok))
	}
	return t
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// limitTable shows each run's headroom against each limit.
func limitTable(runs []Run) *report.Table {
	t := withKnobs(knobCols(runs), []string{"preset", "limit", "counts", "used", "of", "% used"}, []bool{false, false, false, true, true, true})
	for i := range runs {
		r := &runs[i]
		for _, u := range r.Limits {
			pct := report.Num(100*u.Share()) + "%"
			if u.Over {
				pct += " OVER"
			}
			t.Rows = append(t.Rows, append(knobVals(r), r.Preset, u.Name, u.What, usageFigure(u, u.Used), usageFigure(u, u.Limit), pct))
		}
	}
	return t
}

// usageFigure is a limit's figure: GB for bytes, else the count.
func usageFigure(u moe.Usage, v int64) string {
	if strings.Contains(u.What, "bytes") {
		return report.Num(float64(v)/1e9) + " GB"
	}
	return strconv.FormatInt(v, 10)
}

// Tightest is the limit of u a candidate takes the largest share of, with
// that share; "—" when none is known.
func Tightest(u []moe.Usage) string {
	if len(u) == 0 {
		return "—"
	}
	t := u[0]
	for _, x := range u[1:] {
		if x.Share() > t.Share() {
			t = x
		}
	}
	return t.Name + " " + report.Num(100*t.Share()) + "%"
}

// KnobValue is a knob's setting as the reports show it: 0 for an integer
// knob left at the preset's value.
func KnobValue(k transport.Knob, s transport.Settings) string {
	if v, ok := s[k.Name]; ok || k.IsChoice() {
		return v
	}
	return "0"
}

// csvTable has one record per (run, phase) with every figure at full
// precision.
func csvTable(runs []Run) *report.Table {
	cols := []string{"preset", "transport", "mode", "ranks", "gpus_per_node", "tokens", "experts", "topk", "hidden", "nvlink"}
	var fields []transport.Knob
	for _, k := range transport.AllKnobs() {
		if k.Field != "" {
			fields = append(fields, k)
			cols = append(cols, k.Field)
		}
	}
	cols = append(cols, "background", "sets",
		"phase", "mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "algo_gbps", "deepep_algo_gbps", "scaleout_gbps", "nvlink_gbps", "messages", "bound_by")
	causes := moe.CauseNames()
	for _, c := range causes {
		cols = append(cols, "breakdown_"+c+"_us")
	}
	cols = append(cols, "qps_per_nic", "active_connections_per_nic", "connection_knee", "route_hash", "correct")
	t := &report.Table{Columns: cols}
	f := csvFloat
	for i := range runs {
		r := &runs[i]
		for _, ph := range r.phases() {
			p := ph.p
			row := []string{r.Preset, r.Transport, r.Mode, strconv.Itoa(r.Ranks), strconv.Itoa(r.GPUsPerNode),
				strconv.Itoa(r.Tokens), strconv.Itoa(r.Experts), strconv.Itoa(r.TopK), strconv.Itoa(r.Hidden), strconv.FormatBool(r.NVLink)}
			for _, k := range fields {
				row = append(row, KnobValue(k, r.Settings))
			}
			row = append(row, r.Background, strings.Join(r.Sets, ";"), ph.name,
				f(p.MeanUs), f(p.MinUs), f(p.MaxUs), f(p.P50Us), f(p.P99Us), f(p.IssueDoneUs), f(p.AlgoGBps), f(p.DeepEPGBps),
				f(p.ScaleOutGBps), f(p.NVLinkGBps), strconv.FormatInt(p.Messages, 10), p.Bound())
			for _, c := range causes {
				row = append(row, f(p.Breakdown[c]))
			}
			x := r.Resources
			row = append(row, strconv.Itoa(x.QPsPerNIC), strconv.Itoa(x.ActiveConnPerNIC), strconv.Itoa(x.ConnKnee),
				r.RouteHash, strconv.FormatBool(r.Correct))
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}
