package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func figure() Figure {
	return Figure{Panels: []Panel{
		{Title: "lines", XLabel: "ranks", YLabel: "µs", Series: []Series{
			{Name: "a", X: []float64{8, 16, 32}, Y: []float64{10, 20, 45}, Line: true, Points: true},
			{Name: "b", X: []float64{8, 16, 32}, Y: []float64{12, 18, 30}, Line: true, Labels: []string{"x", "y", "z"}},
		}},
		{Title: "bars", XLabel: "phase", YLabel: "µs", Stacks: &Stacks{Groups: []string{"dispatch", "combine"},
			Layers: []Layer{{Name: "wire", Values: []float64{3, 4}}, {Name: "idle", Values: []float64{0, 0}}, {Name: "egress", Values: []float64{1, 2}}}}},
		{Title: "log-log", XLabel: "paper", YLabel: "model", XLog: true, YLog: true, Identity: &Identity{Band: 0.1},
			Series: []Series{{Name: "rows", X: []float64{0.2, 3, 0, 250}, Y: []float64{0.21, 2.9, 1, 240}}}},
	}}
}

func TestRenderIsDeterministicAndDrawsTheLegend(t *testing.T) {
	t.Parallel()
	var a, b bytes.Buffer
	if err := Render(&a, "svg", figure()); err != nil {
		t.Fatal(err)
	}
	if err := Render(&b, "svg", figure()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two renders of one figure differ")
	}
	svg := a.String()
	for _, w := range []string{">lines<", ">bars<", ">log-log<", ">ranks<", ">µs<", ">a<", ">b<", ">wire<", ">egress<", ">y = x<", ">±10% band<", ">0.2<", ">250<"} {
		if !strings.Contains(svg, w) {
			t.Errorf("the SVG lacks %s", w)
		}
	}
	// A layer no group pays stays out of the legend.
	if strings.Contains(svg, ">idle<") {
		t.Error("an all-zero layer is in the legend")
	}
	if body := SVGBody(a.Bytes()); !bytes.HasPrefix(body, []byte("<svg")) {
		t.Errorf("SVGBody starts %q", body[:10])
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	tooMany := make([]Layer, len(Palette)+1)
	for i := range tooMany {
		tooMany[i] = Layer{Name: fmt.Sprint(i), Values: []float64{1}}
	}
	for _, tc := range []struct {
		name   string
		f      Figure
		format string
		want   string
	}{
		{"no panel", Figure{}, "svg", "no panel"},
		{"unlabelled axis", Figure{Panels: []Panel{{XLabel: "x"}}}, "svg", "both axes need a label"},
		{"ragged series", Figure{Panels: []Panel{{XLabel: "x", YLabel: "y", Series: []Series{{Name: "s", X: []float64{1}}}}}}, "svg", "1 x values for 0 y values"},
		{"ragged layer", Figure{Panels: []Panel{{XLabel: "x", YLabel: "y", Stacks: &Stacks{Groups: []string{"g"}, Layers: []Layer{{Name: "l", Values: []float64{1, 2}}}}}}}, "svg", "2 values for 1 groups"},
		{"unknown format", figure(), "pdf", "want svg or png"},
		{"no series", Figure{Panels: []Panel{{Title: "t", XLabel: "x", YLabel: "y"}}}, "svg", `panel "t": no point to draw`},
		{"no point a log axis shows", Figure{Panels: []Panel{{Title: "t", XLabel: "x", YLabel: "y", XLog: true,
			Series: []Series{{Name: "s", X: []float64{0, -1, math.NaN()}, Y: []float64{1, 2, 3}}}}}}, "png", "no point to draw"},
		{"bars all zero", Figure{Panels: []Panel{{XLabel: "x", YLabel: "y", Stacks: &Stacks{Groups: []string{"g"},
			Layers: []Layer{{Name: "l", Values: []float64{0}}}}}}}, "svg", `panel "panel 1": no point to draw`},
		{"second panel empty", Figure{Panels: []Panel{figure().Panels[0], {Title: "load", XLabel: "x", YLabel: "y"}}}, "svg", `"load"`},
		{"more layers than colours", Figure{Panels: []Panel{{XLabel: "x", YLabel: "y", Stacks: &Stacks{Groups: []string{"g"},
			Layers: tooMany}}}}, "svg", "more than the 16 colours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			err := Render(&b, tc.format, tc.f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"a.svg": "svg", "dir/B.PNG": "png", "x.pdf": "", "noext": ""} {
		got, err := FormatOf(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("FormatOf(%q) = %q, %v", in, got, err)
		}
	}
}

// labels lists the labelled ticks' labels.
func labels(ts []plot.Tick) string {
	var l []string
	for _, k := range ts {
		if k.Label != "" {
			l = append(l, k.Label)
		}
	}
	return strings.Join(l, " ")
}

func log10s(v ...float64) []float64 {
	for i := range v {
		v[i] = math.Log10(v[i])
	}
	return v
}

func TestLogTicks(t *testing.T) {
	t.Parallel()
	many := log10s(0.15, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 4, 5, 6.8)
	for _, tc := range []struct {
		name   string
		data   []float64
		lo, hi float64
		want   string
	}{
		// A sweep of ranks: each value, not 10, 20 and 50 between them.
		{"few values are labelled themselves", log10s(8, 16, 32, 64), math.Log10(8), math.Log10(64), "8 16 32 64"},
		{"few fractional values at three digits", log10s(0.2, 3.14159, 250), math.Log10(0.13), math.Log10(375), "0.2 3.14 250"},
		{"crowded values keep the first of each pair", log10s(10, 10.5, 100), 1, 2, "10 100"},
		// The identity band widens the axis past the data: no label
		// out there.
		{"many values by decade within their range", many, math.Log10(0.1), math.Log10(10.2), "0.2 0.5 1 2 5"},
		{"many values over three decades", append(log10s(0.12, 0.3, 0.5, 0.7, 1, 2, 3, 4, 5, 6, 7, 8), log10s(20, 70)...), -1, 2, "1 10"},
		{"many values within a decade label their ends", log10s(11, 12, 13, 14, 15, 16, 17, 18, 19, 19.5, 19.8), math.Log10(11), math.Log10(19.8), "11 19.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := logTicks{data: tc.data}.Ticks(tc.lo, tc.hi)
			if got := labels(ts); got != tc.want {
				t.Errorf("labels %q, want %q", got, tc.want)
			}
			for i, k := range ts {
				if k.Value < tc.lo-1e-9 || k.Value > tc.hi+1e-9 || (i > 0 && k.Value < ts[i-1].Value) {
					t.Errorf("tick %d at %g: outside [%g, %g] or out of order", i, k.Value, tc.lo, tc.hi)
				}
			}
		})
	}
}

func TestIntegerTicks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 1, "0 1"},
		{11, 12, "11 12"},
		{-1, 1, "-1 0 1"},
		{0, 7, "0 3 6"},
		{0, 63, "0 30 60"},
	} {
		ts := integers{}.Ticks(tc.lo, tc.hi)
		if got := labels(ts); got != tc.want {
			t.Errorf("[%g, %g]: labels %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
		for _, k := range ts {
			if k.Value != math.Trunc(k.Value) {
				t.Errorf("[%g, %g]: a tick at %g", tc.lo, tc.hi, k.Value)
			}
		}
	}
}

// Any two colours of the palette stay apart by CIE76 ΔE.
func TestPaletteColoursStayApart(t *testing.T) {
	t.Parallel()
	lab := func(c color.Color) [3]float64 {
		r, g, b, _ := c.RGBA()
		lin := func(v uint32) float64 {
			c := float64(v) / 0xffff
			if c <= 0.04045 {
				return c / 12.92
			}
			return math.Pow((c+0.055)/1.055, 2.4)
		}
		R, G, B := lin(r), lin(g), lin(b)
		x, y, z := (0.4124*R+0.3576*G+0.1805*B)/0.95047, 0.2126*R+0.7152*G+0.0722*B, (0.0193*R+0.1192*G+0.9505*B)/1.08883
		f := func(v float64) float64 {
			if v > 0.008856 {
				return math.Cbrt(v)
			}
			return 7.787*v + 16.0/116
		}
		return [3]float64{116*f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))}
	}
	for i := range Palette {
		for j := range i {
			a, b := lab(Palette[i]), lab(Palette[j])
			if d := math.Hypot(math.Hypot(a[0]-b[0], a[1]-b[1]), a[2]-b[2]); d < 20 {
				t.Errorf("colours %d and %d: ΔE %.1f, under 20", j, i, d)
			}
		}
	}
}

// fills lists the fill colours an SVG uses, in order of first use.
func fills(svg string) []string {
	var f []string
	for _, part := range strings.Split(svg, "fill:")[1:] {
		c := part[:min(len(part), 7)]
		if !slices.Contains(f, c) {
			f = append(f, c)
		}
	}
	return f
}

// A layer keeps its colour whether or not the layers before it are drawn.
func TestLayerColourIsStable(t *testing.T) {
	t.Parallel()
	hex := func(c color.Color) string {
		r, g, b, _ := c.RGBA()
		return fmt.Sprintf("#%02X%02X%02X", r>>8, g>>8, b>>8)
	}
	render := func(first float64) []string {
		f := Figure{Panels: []Panel{{XLabel: "x", YLabel: "y", Stacks: &Stacks{Groups: []string{"g"},
			Layers: []Layer{{Name: "wire", Values: []float64{first}}, {Name: "egress", Values: []float64{2}}}}}}}
		var b bytes.Buffer
		if err := Render(&b, "svg", f); err != nil {
			t.Fatal(err)
		}
		return fills(b.String())
	}
	both, alone := render(1), render(0)
	for _, c := range []string{hex(Palette[0]), hex(Palette[1])} {
		if !slices.Contains(both, c) {
			t.Errorf("both layers drawn: no fill %s in %v", c, both)
		}
	}
	if slices.Contains(alone, hex(Palette[0])) || !slices.Contains(alone, hex(Palette[1])) {
		t.Errorf("egress alone: fills %v, want %s and not %s", alone, hex(Palette[1]), hex(Palette[0]))
	}
}

func BenchmarkRenderSVG(b *testing.B) {
	f := figure()
	b.ReportAllocs()
	for b.Loop() {
		var buf bytes.Buffer
		if err := Render(&buf, "svg", f); err != nil {
			b.Fatal(err)
		}
	}
}
