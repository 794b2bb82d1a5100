package plot

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is what a command draws.
type Figure struct {
	Panels []Panel
	// Width and Height of the whole figure; zero picks 5.5 in per panel
	// by 4 in.
	Width, Height vg.Length
}

// Panel is one set of axes.
type Panel struct {
	Title          string
	XLabel, YLabel string // with units
	XLog, YLog     bool
	// XCategories makes X nominal: a series' X values index them.
	XCategories []string
	Series      []Series
	Stacks      *Stacks
	// Identity draws y = x with a band of ±Band around it (a fraction).
	Identity *Identity
	// LegendBottom puts the legend in the bottom left corner instead of
	// the top left (a Pareto front leaves that corner empty).
	LegendBottom bool
	// XInteger and YInteger tick an axis of whole numbers (a layer index,
	// a rank, a count) at whole numbers only.
	XInteger, YInteger bool
}

// Series is one named set of points.
type Series struct {
	Name   string
	X, Y   []float64
	Line   bool // join the points
	Points bool // mark them
	// Emphasis draws the points larger and filled.
	Emphasis bool
	// Labels, when set, annotate each point.
	Labels []string
}

// Stacks are bars stacked per group, bottom layer first.
type Stacks struct {
	Groups []string
	Layers []Layer
}

// Layer is one stacked quantity across the groups. The i-th layer of
// Stacks is filled with Palette[i] whether or not the layers before it are
// drawn, so a figure that lists its quantities in one order gives each the
// same colour in every plot.
type Layer struct {
	Name   string
	Values []float64
}

// Identity is the y = x reference with an error band.
type Identity struct {
	Band float64
}

// Palette is the colours of stacked layers, in order: sixteen that stay
// apart (at least 20 CIE76 units between any two), where gonum's own
// palette has seven and repeats them.
var Palette = []color.Color{
	rgb(0x1f77b4), rgb(0xff7f0e), rgb(0x2ca02c), rgb(0xd62728), rgb(0x9467bd), rgb(0x8c564b), rgb(0xe377c2), rgb(0x7f7f7f),
	rgb(0xbcbd22), rgb(0x17becf), rgb(0xffe119), rgb(0x393b79), rgb(0xaaffc3), rgb(0xfabebe), rgb(0x00545c), rgb(0x000000),
}

func rgb(v uint32) color.NRGBA {
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

// ErrNoPoints is Render's error for a panel with nothing to draw: no point
// a series can show and no bar above zero.
var ErrNoPoints = errors.New("no point to draw")

// Empty names the first panel of f with nothing to draw, or returns ""
// when every panel has something.
func (f Figure) Empty() string {
	for i := range f.Panels {
		if !f.Panels[i].drawable() {
			if t := f.Panels[i].Title; t != "" {
				return t
			}
			return fmt.Sprintf("panel %d", i+1)
		}
	}
	return ""
}

// drawable reports whether pn has a point or a bar to draw.
func (pn *Panel) drawable() bool {
	for _, s := range pn.Series {
		for k := range min(len(s.X), len(s.Y)) {
			if usable(pn, s.X[k], s.Y[k]) {
				return true
			}
		}
	}
	if pn.Stacks != nil {
		for _, l := range pn.Stacks.Layers {
			for _, v := range l.Values {
				if v > 0 && !math.IsInf(v, 0) {
					return true
				}
			}
		}
	}
	return false
}

// Formats are the file types Render writes.
var Formats = []string{"svg", "png"}

// FormatOf is the format a file name's extension asks for.
func FormatOf(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	for _, f := range Formats {
		if ext == f {
			return f, nil
		}
	}
	return "", fmt.Errorf("%q: want a .svg or .png file", path)
}

// Render draws f as SVG or PNG. It refuses, with ErrNoPoints, a figure
// with a panel that has nothing to draw: an empty chart reads as a result.
func Render(w io.Writer, format string, f Figure) error {
	if len(f.Panels) == 0 {
		return fmt.Errorf("plot: no panel to draw")
	}
	plots := make([]*plot.Plot, len(f.Panels))
	for i := range f.Panels {
		p, err := build(&f.Panels[i])
		if err != nil {
			return fmt.Errorf("plot: panel %q: %w", f.Panels[i].Title, err)
		}
		plots[i] = p
	}
	if t := f.Empty(); t != "" {
		return fmt.Errorf("plot: panel %q: %w", t, ErrNoPoints)
	}
	width, height := f.Width, f.Height
	if width == 0 {
		width = vg.Length(len(plots)) * 5.5 * vg.Inch
	}
	if height == 0 {
		height = 4 * vg.Inch
	}
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch format {
	case "svg":
		c = vgsvg.New(width, height)
	case "png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(144), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("plot: format %q: want svg or png", format)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	cs := plot.Align([][]*plot.Plot{plots}, tiles, dc)
	for i, p := range plots {
		p.Draw(cs[0][i])
	}
	_, err := c.WriteTo(w)
	return err
}

// sans is the figures' typeface: sans-serif reads better at small sizes.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func style(p *plot.Plot) {
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.X.Label.TextStyle.Font = font.From(sans, 11)
	p.Y.Label.TextStyle.Font = font.From(sans, 11)
	p.X.Tick.Label.Font = font.From(sans, 9)
	p.Y.Tick.Label.Font = font.From(sans, 9)
	p.Legend.TextStyle.Font = font.From(sans, 9)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(4)
	p.Add(plotter.NewGrid())
}

func build(pn *Panel) (*plot.Plot, error) {
	p := plot.New()
	style(p)
	p.Title.Text = pn.Title
	p.Legend.Top = !pn.LegendBottom
	p.X.Tick.Marker = plain{}
	p.Y.Tick.Marker = plain{}
	p.X.Label.Text = pn.XLabel
	p.Y.Label.Text = pn.YLabel
	if pn.XLabel == "" || pn.YLabel == "" {
		return nil, fmt.Errorf("both axes need a label")
	}
	if pn.XInteger {
		p.X.Tick.Marker = integers{}
	}
	if pn.YInteger {
		p.Y.Tick.Marker = integers{}
	}
	// Log axes plot log10 of the data on a linear axis, ticked where the
	// data are: gonum's own log scale places a long axis label by the
	// linear midpoint and squeezes the panel.
	if pn.XLog || pn.YLog {
		xs, ys := pn.logData()
		if pn.XLog {
			p.X.Tick.Marker = logTicks{data: xs}
		}
		if pn.YLog {
			p.Y.Tick.Marker = logTicks{data: ys}
		}
	}
	if pn.Identity != nil {
		if err := identity(p, pn); err != nil {
			return nil, err
		}
	}
	if pn.Stacks != nil {
		if err := stacks(p, pn.Stacks); err != nil {
			return nil, err
		}
	}
	for i, s := range pn.Series {
		if err := series(p, pn, i, s); err != nil {
			return nil, fmt.Errorf("series %q: %w", s.Name, err)
		}
	}
	if len(pn.XCategories) > 0 {
		p.NominalX(pn.XCategories...)
		p.X.Label.Text = pn.XLabel
	}
	return p, nil
}

// xy places a data point on the panel's axes: log10 on a log axis.
func (pn *Panel) xy(x, y float64) plotter.XY {
	if pn.XLog {
		x = math.Log10(x)
	}
	if pn.YLog {
		y = math.Log10(y)
	}
	return plotter.XY{X: x, Y: y}
}

// plain is gonum's default ticks with labels in the shortest form.
type plain struct{}

func (plain) Ticks(lo, hi float64) []plot.Tick {
	t := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range t {
		if t[i].Label != "" {
			t[i].Label = short(t[i].Value)
		}
	}
	return t
}

// short prints v in the shortest form at six significant digits.
func short(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// logTicks ticks a log10 axis where its data are, so that no label sits
// over a range without a point. Up to maxDataTicks distinct values (a
// swept knob: 8, 16, 32, 64 ranks) are labelled themselves; more are
// labelled at each power of ten within their range, and at 2 and 5 times
// one when that range is under two decades. Unlabelled ticks at each
// multiple of a power of ten keep the scale readable.
type logTicks struct {
	data []float64 // log10 of the distinct values, ascending
}

// maxDataTicks is the most distinct values a log axis labels one by one.
const maxDataTicks = 10

func (l logTicks) Ticks(lo, hi float64) []plot.Tick {
	const eps = 1e-9
	var major []plot.Tick
	dlo, dhi := lo, hi
	if n := len(l.data); n > 0 {
		dlo, dhi = l.data[0], l.data[n-1]
	}
	if n := len(l.data); n > 0 && n <= maxDataTicks {
		// Each value, but none within a twelfth of the axis of the last
		// one labelled: their labels would overlap.
		last := math.Inf(-1)
		for _, v := range l.data {
			if v-last >= (hi-lo)/12 {
				major = append(major, plot.Tick{Value: v, Label: dataLabel(math.Pow(10, v))})
				last = v
			}
		}
	} else {
		// A fiftieth of the axis of slack: 0.0999 and 0.1 share a label.
		slack := max(eps, (hi-lo)/50)
		for e := math.Floor(dlo - slack); e <= math.Ceil(dhi+slack); e++ {
			for _, m := range []float64{1, 2, 5} {
				v := e + math.Log10(m)
				if v >= max(lo, dlo-slack) && v <= min(hi, dhi+slack) && (m == 1 || dhi-dlo < 2) {
					major = append(major, plot.Tick{Value: v, Label: short(m * math.Pow(10, e))})
				}
			}
		}
		if len(major) < 2 {
			// Less than a decade between the values: label their ends.
			major = []plot.Tick{{Value: dlo, Label: dataLabel(math.Pow(10, dlo))}, {Value: dhi, Label: dataLabel(math.Pow(10, dhi))}}
		}
	}
	t := major
	for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
		for m := 1.0; m < 10; m++ {
			v := e + math.Log10(m)
			if v >= lo && v <= hi && !slices.ContainsFunc(major, func(k plot.Tick) bool { return math.Abs(k.Value-v) < eps }) {
				t = append(t, plot.Tick{Value: v})
			}
		}
	}
	slices.SortStableFunc(t, func(a, b plot.Tick) int { return cmp.Compare(a.Value, b.Value) })
	return t
}

// dataLabel prints a data value on an axis: a whole number in full, any
// other at three significant digits.
func dataLabel(v float64) string {
	if r := math.Round(v); math.Abs(v-r) < 1e-9*max(1, math.Abs(v)) && math.Abs(r) < 1e15 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// logData is the distinct log10 values of the points pn draws, per axis,
// ascending.
func (pn *Panel) logData() (xs, ys []float64) {
	for _, s := range pn.Series {
		for k := range min(len(s.X), len(s.Y)) {
			if usable(pn, s.X[k], s.Y[k]) {
				xy := pn.xy(s.X[k], s.Y[k])
				xs, ys = append(xs, xy.X), append(ys, xy.Y)
			}
		}
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	slices.Sort(xs)
	slices.Sort(ys)
	return slices.CompactFunc(xs, near), slices.CompactFunc(ys, near)
}

// integers ticks an axis of whole numbers (a layer index, a rank) at
// whole numbers only: gonum's ticks for 0 to 1 include 0.5.
type integers struct{}

func (integers) Ticks(lo, hi float64) []plot.Tick {
	var t []plot.Tick
	labelled := 0
	for _, k := range (plain{}).Ticks(lo, hi) {
		if k.Value == math.Trunc(k.Value) {
			t = append(t, k)
			if k.Label != "" {
				labelled++
			}
		}
	}
	if a, b := math.Ceil(lo), math.Floor(hi); labelled < 2 && b-a <= 10 {
		// A short axis: label each whole number on it.
		t = nil
		for v := a; v <= b; v++ {
			t = append(t, plot.Tick{Value: v, Label: short(v)})
		}
	}
	return t
}

// usable drops points a log axis cannot show.
func usable(pn *Panel, x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
		return false
	}
	return (!pn.XLog || x > 0) && (!pn.YLog || y > 0)
}

func series(p *plot.Plot, pn *Panel, i int, s Series) error {
	if len(s.X) != len(s.Y) {
		return fmt.Errorf("%d x values for %d y values", len(s.X), len(s.Y))
	}
	var xys plotter.XYs
	var labels []string
	for k := range s.X {
		if usable(pn, s.X[k], s.Y[k]) {
			xys = append(xys, pn.xy(s.X[k], s.Y[k]))
			if k < len(s.Labels) {
				labels = append(labels, s.Labels[k])
			}
		}
	}
	if len(xys) == 0 {
		return nil
	}
	col := plotutil.Color(i)
	var thumbs []plot.Thumbnailer
	if s.Line {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = col
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i / 7)
		p.Add(l)
		thumbs = append(thumbs, l)
	}
	if s.Points || !s.Line {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		sc.Color = col
		sc.Shape = plotutil.Shape(i)
		sc.Radius = vg.Points(3)
		if s.Emphasis {
			sc.Radius = vg.Points(5)
			sc.Shape = draw.CircleGlyph{}
		}
		p.Add(sc)
		thumbs = append(thumbs, sc)
	}
	if len(labels) == len(xys) {
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return err
		}
		for j := range lb.TextStyle {
			lb.TextStyle[j].Font = font.From(sans, 8)
			lb.TextStyle[j].XAlign = draw.XLeft
		}
		lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(2)}
		p.Add(lb)
	}
	if s.Name != "" {
		p.Legend.Add(s.Name, thumbs...)
	}
	return nil
}

func stacks(p *plot.Plot, st *Stacks) error {
	if len(st.Groups) == 0 {
		return fmt.Errorf("stacked bars without groups")
	}
	if len(st.Layers) > len(Palette) {
		return fmt.Errorf("%d layers, more than the %d colours that stay apart", len(st.Layers), len(Palette))
	}
	var below *plotter.BarChart
	width := vg.Points(min(40, 300/float64(len(st.Groups))))
	for i, l := range st.Layers {
		if len(l.Values) != len(st.Groups) {
			return fmt.Errorf("layer %q: %d values for %d groups", l.Name, len(l.Values), len(st.Groups))
		}
		nonzero := false
		for _, v := range l.Values {
			if v != 0 {
				nonzero = true
			}
		}
		if !nonzero {
			continue // a cause no group pays
		}
		b, err := plotter.NewBarChart(plotter.Values(l.Values), width)
		if err != nil {
			return err
		}
		b.Color = Palette[i]
		b.LineStyle.Width = vg.Points(0.3)
		if below != nil {
			b.StackOn(below)
		}
		p.Add(b)
		p.Legend.Add(l.Name, b)
		below = b
	}
	p.NominalX(st.Groups...)
	// Room on the right for the legend, clear of the bars.
	p.X.Max += 2.5
	p.Legend.Left = false
	return nil
}

// identity draws y = x and its band over the range of the panel's points.
func identity(p *plot.Plot, pn *Panel) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range pn.Series {
		for k := range s.X {
			if usable(pn, s.X[k], s.Y[k]) {
				lo = min(lo, s.X[k], s.Y[k])
				hi = max(hi, s.X[k], s.Y[k])
			}
		}
	}
	if lo > hi {
		return nil
	}
	lo, hi = lo/1.5, hi*1.5
	b := pn.Identity.Band
	band, err := plotter.NewPolygon(plotter.XYs{pn.xy(lo, lo*(1-b)), pn.xy(hi, hi*(1-b)), pn.xy(hi, hi*(1+b)), pn.xy(lo, lo*(1+b))})
	if err != nil {
		return err
	}
	band.Color = color.NRGBA{R: 150, G: 150, B: 150, A: 70}
	band.LineStyle.Width = 0
	line, err := plotter.NewLine(plotter.XYs{pn.xy(lo, lo), pn.xy(hi, hi)})
	if err != nil {
		return err
	}
	line.Color = color.Gray{Y: 90}
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(band, line)
	p.Legend.Add("y = x", line)
	p.Legend.Add(fmt.Sprintf("±%.0f%% band", 100*b), band)
	return nil
}

// SVGBody is an SVG document without its XML declaration, for inlining
// into HTML.
func SVGBody(svg []byte) []byte {
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		return svg[i:]
	}
	return svg
}
