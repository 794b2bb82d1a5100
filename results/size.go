package results

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"moebench/internal/plot"
	"moebench/internal/report"
	"moebench/internal/shard"
	"moebench/sizing"
	"moebench/transport"
)

// Size is size's document: a finished study.
type Size struct {
	Header report.Header `json:"header"`
	*sizing.Result
}

// Head is the document's header.
func (d *Size) Head() report.Header { return d.Header }

// WriteCSV is the csv format: a record per candidate.
func (d *Size) WriteCSV(w io.Writer) error { return sizeCSV(d.Result).WriteCSV(w, &d.Header) }

// Figure is size's plot: the Pareto front.
func (d *Size) Figure() plot.Figure { return sizeFigure(d.Result) }

// WriteText is the table format: the candidates, the recommendation and
// why, and why not the others.
func (d *Size) WriteText(w io.Writer) error {
	res := d.Result
	if err := sizeTable(res).WriteText(w, &d.Header); err != nil {
		return err
	}
	var b strings.Builder
	if res.Recommended >= 0 {
		fmt.Fprintf(&b, "\nRecommended: %s\n", res.Candidates[res.Recommended].Name)
	} else {
		b.WriteString("\nNo recommendation:\n")
	}
	for _, r := range res.Reasons {
		fmt.Fprintf(&b, "  - %s\n", r)
	}
	fmt.Fprintf(&b, "\n%d candidates, %d modelled, %d on the Pareto front (layer time against resources). Why not the others:\n",
		len(res.Candidates), res.Runs, len(res.Front))
	for _, c := range SizeOrder(res) {
		if c.Verdict == sizing.Dominated || c.Verdict == sizing.Rejected {
			fmt.Fprintf(&b, "  %s: %s: %s\n", c.Name, c.Verdict, c.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SizeOrder lists the recommendation, then the front fastest first, then
// the other modelled candidates fastest first, then the rest in order.
func SizeOrder(res *sizing.Result) []*sizing.Candidate {
	rank := func(c *sizing.Candidate) int {
		switch {
		case c.Verdict == sizing.Recommended:
			return 0
		case c.Verdict == sizing.Front:
			return 1
		case c.Figures != nil && c.Verdict == sizing.Dominated:
			return 2
		case c.Figures != nil:
			return 3
		}
		return 4
	}
	out := make([]*sizing.Candidate, len(res.Candidates))
	for i := range res.Candidates {
		out[i] = &res.Candidates[i]
	}
	slices.SortStableFunc(out, func(a, b *sizing.Candidate) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		if a.Figures != nil && b.Figures != nil && a.Figures.LayerUs != b.Figures.LayerUs {
			if a.Figures.LayerUs < b.Figures.LayerUs {
				return -1
			}
			return 1
		}
		return a.Index - b.Index
	})
	return out
}

func sizeTable(res *sizing.Result) *report.Table {
	t := &report.Table{
		Columns: []string{"candidate", "verdict", "layer µs", "dispatch mean", "dispatch p99", "combine mean", "combine p99", "floor µs",
			"QPs/NIC", "active conns/NIC", "knee"},
		Numeric: []bool{false, false, true, true, true, true, true, true, true, true, true},
	}
	// The kinds the candidates' mechanisms declare for the table, each as
	// its host figure where it has one.
	mechs := []string{}
	for _, c := range res.Candidates {
		mechs = append(mechs, c.Transport)
	}
	var own []transport.Resource
	for _, d := range transport.HeldBy(mechs) {
		if d.Size {
			own = append(own, d)
			col := d.Name
			if d.Host != "" {
				col = d.Host
			}
			t.Columns = append(t.Columns, col)
			t.Numeric = append(t.Numeric, true)
		}
	}
	t.Columns = append(t.Columns, "SQ MiB/GPU", "buffer MiB/GPU", "host MiB/GPU", "bound by", "tightest limit")
	t.Numeric = append(t.Numeric, true, true, true, false, false)
	dash := "—"
	for _, c := range SizeOrder(res) {
		r := c.Resources
		row := []string{c.Name, c.Verdict}
		if f := c.Figures; f != nil {
			row = append(row, report.Num(f.LayerUs), report.Num(f.Dispatch.MeanUs), report.Num(f.Dispatch.P99Us),
				report.Num(f.Combine.MeanUs), report.Num(f.Combine.P99Us))
		} else {
			row = append(row, dash, dash, dash, dash, dash)
		}
		floor := dash
		if c.FloorUs > 0 {
			floor = report.Num(c.FloorUs)
		}
		knee := dash
		if r.ConnKnee > 0 {
			knee = strconv.Itoa(r.ConnKnee)
		}
		bound := c.FloorBy + " (floor)"
		if c.Figures != nil {
			bound = c.Figures.BoundBy
		}
		row = append(row, floor, strconv.Itoa(r.QPsPerNIC), strconv.Itoa(r.ActiveConnPerNIC), knee)
		for _, d := range own {
			row = append(row, strconv.Itoa(r.Figure(d)))
		}
		row = append(row, report.Num(mib(r.GPUQueueBytes)), report.Num(mib(r.BufferBytes)), report.Num(mib(r.HostQueueBytes)), bound, Tightest(c.Headroom))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// sizeCSV has one record per candidate, in study order, at full precision.
func sizeCSV(res *sizing.Result) *report.Table {
	cols := []string{"index", "candidate", "preset", "transport"}
	var fields []transport.Knob
	for _, k := range transport.AllKnobs() {
		if k.Field != "" && k.Sizes != "" {
			fields = append(fields, k)
			cols = append(cols, k.Field)
		}
	}
	t := &report.Table{Columns: append(cols, "queues",
		"verdict", "stage", "by", "reason", "layer_us", "dispatch_mean_us", "dispatch_p99_us", "dispatch_max_us", "combine_mean_us", "combine_p99_us",
		"combine_max_us", "bound_by", "correct", "floor_us", "floor_by", "qps_per_nic", "active_connections_per_nic", "connection_knee")}
	// Every declared kind, and its host figure where it has one.
	held := transport.Held()
	for _, d := range held {
		t.Columns = append(t.Columns, d.Field)
		if d.Host != "" {
			t.Columns = append(t.Columns, d.HostField)
		}
	}
	t.Columns = append(t.Columns, "gpu_queue_bytes", "rdma_buffer_bytes", "host_queue_bytes", "conn_miss_rate", "estimated")
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, c := range res.Candidates {
		r := c.Resources
		figs := make([]string, 9)
		if f := c.Figures; f != nil {
			figs = []string{g(f.LayerUs), g(f.Dispatch.MeanUs), g(f.Dispatch.P99Us), g(f.Dispatch.MaxUs), g(f.Combine.MeanUs), g(f.Combine.P99Us),
				g(f.Combine.MaxUs), f.BoundBy, strconv.FormatBool(f.Correct)}
		}
		row := []string{strconv.Itoa(c.Index), c.Name, c.Preset, c.Transport}
		for _, k := range fields {
			row = append(row, KnobValue(k, c.Knobs))
		}
		row = append(row, c.Queues, c.Verdict, c.Stage, strconv.Itoa(c.By), c.Reason)
		row = append(row, figs...)
		row = append(row, g(c.FloorUs), c.FloorBy, strconv.Itoa(r.QPsPerNIC), strconv.Itoa(r.ActiveConnPerNIC), strconv.Itoa(r.ConnKnee))
		for _, d := range held {
			row = append(row, strconv.Itoa(r.Own[d.Name]))
			if d.Host != "" {
				row = append(row, strconv.Itoa(r.Figure(d)))
			}
		}
		row = append(row, strconv.FormatInt(r.GPUQueueBytes, 10), strconv.FormatInt(r.BufferBytes, 10), strconv.FormatInt(r.HostQueueBytes, 10),
			g(r.ConnMissRate), strconv.FormatBool(r.Estimated))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// SizeShard is one shard of a sizing study: its candidates, modelled but
// not yet judged, for merge.
type SizeShard struct {
	Header     report.Header      `json:"header"`
	Shard      shard.Info         `json:"shard"`
	Limits     sizing.Limits      `json:"limits"`
	Candidates []sizing.Candidate `json:"candidates"`
}

// Head is the document's header.
func (d *SizeShard) Head() report.Header { return d.Header }
