package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"

	"moebench/internal/inputfile"
	"moebench/internal/plot"
	"moebench/internal/report"
	"moebench/sizing"
)

// Section is one result file on the report page.
type Section struct {
	File    string
	Command string
	Header  []string
	Tables  []htmlTable
	Notes   []string // recommendation and reasons, summaries
	Lists   []htmlList
	Plots   []template.HTML // inline SVG
}

type htmlTable struct {
	Caption string
	Columns []string
	Numeric []bool
	Rows    [][]string
}

type htmlList struct {
	Caption string
	Items   []string
}

func tableOf(caption string, t *report.Table) htmlTable {
	return htmlTable{Caption: caption, Columns: t.Columns, Numeric: t.Numeric, Rows: t.Rows}
}

// NewSection reads one result, whatever command wrote it, as the page's
// section named name.
func NewSection(name string, data []byte) (Section, error) {
	var probe struct {
		Header *report.Header   `json:"header"`
		Shard  *json.RawMessage `json:"shard"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return Section{}, fmt.Errorf("not a moebench JSON result: %v", inputfile.JSONError("", data, err))
	}
	if probe.Header == nil {
		return Section{}, fmt.Errorf("not a moebench JSON result (no header): write it with --format json")
	}
	if probe.Shard != nil {
		return Section{}, fmt.Errorf("one shard of a study: merge the shards first (moebench merge)")
	}
	h := *probe.Header
	s := Section{File: name, Command: h.Command, Header: h.Lines()}
	var fig plot.Figure
	switch h.Command {
	case "run", "sweep":
		var d Layer
		if err := json.Unmarshal(data, &d); err != nil {
			return s, inputfile.JSONError("", data, err)
		}
		s.Tables = append(s.Tables, tableOf("Dispatch and combine", layerTimeTable(&d)), tableOf("Resources", layerResourceTable(&d)))
		fig = d.Figure()
	case "size":
		var d Size
		if err := json.Unmarshal(data, &d); err != nil {
			return s, inputfile.JSONError("", data, err)
		}
		if d.Result == nil || d.Candidates == nil {
			return s, fmt.Errorf("a size result without candidates")
		}
		s.Tables = append(s.Tables, tableOf("Candidates", sizeTable(d.Result)))
		if d.Recommended >= 0 && d.Recommended < len(d.Candidates) {
			s.Notes = append(s.Notes, "Recommended: "+d.Candidates[d.Recommended].Name)
		}
		s.Lists = append(s.Lists, htmlList{Caption: "Why", Items: d.Reasons})
		var why []string
		for _, c := range SizeOrder(d.Result) {
			if c.Verdict == sizing.Dominated || c.Verdict == sizing.Rejected {
				why = append(why, c.Name+": "+c.Verdict+": "+c.Reason)
			}
		}
		s.Lists = append(s.Lists, htmlList{Caption: "Why not the others", Items: why})
		fig = d.Figure()
	case "replay":
		var d Replay
		if err := json.Unmarshal(data, &d); err != nil {
			return s, inputfile.JSONError("", data, err)
		}
		s.Tables = append(s.Tables, tableOf("Layer time over the replay (slowest rank)", replayTable(&d)))
		fig = d.Figure()
	case "validate":
		var d Validate
		if err := json.Unmarshal(data, &d); err != nil {
			return s, inputfile.JSONError("", data, err)
		}
		s.Tables = append(s.Tables, tableOf("Model against reference", validateTable(&d)))
		if d.Summary != nil && d.Summary.Rows > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%d rows: median error %s, mean %s, max %s (%s)", d.Summary.Rows,
				report.Pct(d.Summary.MedianErr), report.Pct(d.Summary.MeanErr), report.Pct(d.Summary.MaxErr), d.Summary.Worst))
		}
		fig = d.Figure()
	default:
		return s, fmt.Errorf("a %q result; report takes run, sweep, size, replay and validate results", h.Command)
	}
	if t := fig.Empty(); t != "" {
		// An empty chart would read as a result: say so instead.
		s.Notes = append(s.Notes, fmt.Sprintf("No plot: nothing to draw in %q.", t))
		return s, nil
	}
	var b bytes.Buffer
	if err := plot.Render(&b, "svg", fig); err != nil {
		return s, err
	}
	s.Plots = append(s.Plots, template.HTML(plot.SVGBody(b.Bytes())))
	return s, nil
}

func layerTimeTable(d *Layer) *report.Table {
	t := &report.Table{Columns: []string{"preset", "transport", "swept", "phase", "mean µs", "p50 µs", "p99 µs", "max µs", "algo GB/s", "bound by"},
		Numeric: []bool{false, false, false, false, true, true, true, true, true, false}}
	for _, r := range d.Results {
		var sw []string
		for _, k := range KnobOrder() {
			if v, ok := r.Knobs[k]; ok {
				sw = append(sw, k+"="+v)
			}
		}
		for _, ph := range r.phases() {
			p := ph.p
			t.Rows = append(t.Rows, []string{r.Preset, r.Transport, strings.Join(sw, " "), ph.name, report.Num(p.MeanUs), report.Num(p.P50Us),
				report.Num(p.P99Us), report.Num(p.MaxUs), report.Num(p.AlgoGBps), p.BoundBy})
		}
	}
	return t
}

func layerResourceTable(d *Layer) *report.Table {
	mechs := []string{}
	for _, r := range d.Results {
		mechs = append(mechs, r.Transport)
	}
	held := heldNames(mechs)
	t := &report.Table{Columns: append(append([]string{"preset", "QPs/NIC", "active conns/NIC", "knee"}, held...), "queue MiB/rank", "buffer MiB/rank", "correct"),
		Numeric: []bool{false, true, true, true}}
	for range held {
		t.Numeric = append(t.Numeric, true)
	}
	t.Numeric = append(t.Numeric, true, true, false)
	for _, r := range d.Results {
		x := r.Resources
		row := []string{r.Preset, strconv.Itoa(x.QPsPerNIC), strconv.Itoa(x.ActiveConnPerNIC), strconv.Itoa(x.ConnKnee)}
		for _, k := range held {
			row = append(row, strconv.Itoa(x.Own[k]))
		}
		t.Rows = append(t.Rows, append(row, report.Num(mib(x.QueueBytesPerRank)), report.Num(mib(x.BufferBytesPerRank)), strconv.FormatBool(r.Correct)))
	}
	return t
}

func replayTable(d *Replay) *report.Table {
	t := &report.Table{Columns: []string{"preset", "transport", "phase", "layers", "mean µs", "p50 µs", "p99 µs", "max µs", "bound by", "correct"},
		Numeric: []bool{false, false, false, true, true, true, true, true, false, false}}
	for _, tr := range d.Aggregate.Transports {
		for _, ph := range []struct {
			name string
			p    *AggPhase
		}{{"dispatch", &tr.Dispatch}, {"combine", &tr.Combine}} {
			l := ph.p.LayerUs
			t.Rows = append(t.Rows, []string{tr.Preset, tr.Transport, ph.name, strconv.Itoa(tr.Layers), report.Num(l.Mean), report.Num(l.P50),
				report.Num(l.P99), report.Num(l.Max), ph.p.BoundBy, strconv.FormatBool(tr.Correct)})
		}
	}
	return t
}

func validateTable(d *Validate) *report.Table {
	ref := d.Ref()
	t := &report.Table{Columns: []string{"experiment", "case", "metric", "unit", ref, "model", "rel err"},
		Numeric: []bool{false, false, false, false, true, true, true}}
	str := func(v any) string { s, _ := v.(string); return s }
	f := func(v any) string {
		x, ok := v.(float64)
		if !ok {
			return "—"
		}
		return report.Num(x)
	}
	for _, r := range d.Rows {
		e := "—"
		if x, ok := r["rel_err"].(float64); ok {
			e = report.Pct(x)
		}
		t.Rows = append(t.Rows, []string{str(r["experiment"]), str(r["case"]), str(r["metric"]), str(r["unit"]), f(r[ref]), f(r["model"]), e})
	}
	return t
}

// reportPage is the page: no script, no external resource; the plots are
// inline SVG and the styles inline CSS.
var reportPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1400px; padding: 0 1em; color: #1a1a1a; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { font-size: 1.25em; margin-top: 2.2em; border-bottom: 1px solid #ccc; padding-bottom: .2em; }
pre.header { background: #f5f5f5; padding: .6em .8em; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 12px; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { padding: .2em .6em; border-bottom: 1px solid #e4e4e4; white-space: nowrap; }
th { background: #fafafa; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; }
figure svg { width: 100%; max-width: 900px; height: auto; }
p.note { font-weight: 600; }
.scroll { overflow-x: auto; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>Every figure is modelled unless its header says measured. Sections: {{range $i, $s := .Sections}}{{if $i}}, {{end}}<a href="#s{{$i}}">{{$s.File}}</a>{{end}}.</p>
{{range $i, $s := .Sections}}
<section id="s{{$i}}">
<h2>{{$s.Command}}: {{$s.File}}</h2>
<pre class="header">{{range $s.Header}}{{.}}
{{end}}</pre>
{{range $s.Notes}}<p class="note">{{.}}</p>
{{end}}{{range $s.Plots}}<figure class="plot">{{.}}</figure>
{{end}}{{range $s.Lists}}{{if .Items}}<h3>{{.Caption}}</h3>
<ul>{{range .Items}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{end}}{{range $s.Tables}}<div class="scroll"><table>
<caption>{{.Caption}}</caption>
<thead><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{$num := .Numeric}}{{range .Rows}}<tr>{{range $j, $c := .}}<td{{if index $num $j}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>
{{end}}</section>
{{end}}
</body>
</html>
`))

// Page is the report page: results of any command, one section each.
type Page struct {
	Title    string
	Sections []Section
}

// Head is the page's header: the report command's.
func (p *Page) Head() report.Header { return report.Header{Command: "report"} }

// WriteHTML is the html format: one self-contained page.
func (p *Page) WriteHTML(w io.Writer) error { return reportPage.Execute(w, p) }
