package plot

import (
	"bytes"
	"strings"
	"testing"
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
	for _, w := range []string{">lines<", ">bars<", ">log-log<", ">ranks<", ">µs<", ">a<", ">b<", ">wire<", ">egress<", ">y = x<", ">±10% band<", ">10<", ">100<"} {
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

func TestDecades(t *testing.T) {
	t.Parallel()
	var labels []string
	for _, k := range (decades{}).Ticks(-1, 2) {
		if k.Label != "" {
			labels = append(labels, k.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "0.1 1 10 100" {
		t.Errorf("labels over three decades: %s", got)
	}
	labels = nil
	for _, k := range (decades{}).Ticks(2.1, 2.9) {
		if k.Label != "" {
			labels = append(labels, k.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "200 500" {
		t.Errorf("labels within a decade: %s", got)
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
