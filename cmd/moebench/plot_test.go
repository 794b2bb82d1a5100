package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// svgTexts parses an SVG document, failing on malformed XML, and returns
// the text it draws.
func svgTexts(t *testing.T, data []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var texts []string
	var root string
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not valid XML: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
			inText = x.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(x)))
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return texts
}

// Every command's plot is a valid SVG with its series and axis labels,
// and a valid PNG of the same size class.
func TestEveryPlotKind(t *testing.T) {
	t.Parallel()
	if raceOn {
		t.Skip("no concurrency of its own; the race detector covers size's parallel runs in TestSizeFormats")
	}
	trace := filepath.Join("testdata", "replay", "rank-major.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"run", []string{"run", "--ranks", "8", "--gpus-per-node", "4", "--tokens", "4"},
			[]string{"Critical path by cause (modelled)", "transport and phase", "time on the critical path, µs (mean over ranks)", "mini-gda", "dispatch", "combine", "egress", "wire"}},
		{"sweep", []string{"sweep", "--ranks", "8,16", "--gpus-per-node", "4", "--tokens", "4", "--transport", "mini-gda,mini-proxy"},
			[]string{"Layer time (modelled)", "expert-parallel ranks (GPUs)", "dispatch + combine, µs (mean over ranks)", "mini-gda", "mini-proxy"}},
		{"size", []string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--workers", "1", "--batch", "4", "--no-payload-check"},
			[]string{"Sizing: layer time against queues per NIC (modelled)", "QPs per NIC (DCIs for DC; proxy: workers × peers)",
				"layer µs (slowest rank)", "Pareto front", "recommended", "mini-gda qps=1"}},
		{"replay", []string{"replay", "--trace", trace, "--transport", "mini-gda,dc"},
			[]string{"Per-layer time over the replay (modelled)", "layer, in replay order (step-major)", "dispatch + combine, µs (slowest rank)",
				"Per-rank load", "rank", "selections received over the replay", "mini-gda", "dc", "received", "mean"}},
		{"validate", []string{"validate", "--only", "single-op,inline"},
			[]string{"Model against the paper (every row in its own unit)", "paper value (µs, M msg/s, GB/s, … per row)",
				"modelled value (same unit)", "y = x", "±10% band", "single-op", "inline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			svg, pngPath := filepath.Join(dir, "p.svg"), filepath.Join(dir, "p.png")
			for _, p := range []string{svg, pngPath} {
				if _, _, err := runCLI(t, append(tc.args, "--plot", p, "--out", filepath.Join(dir, "out.txt"))...); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			texts := svgTexts(t, data)
			for _, w := range tc.want {
				if !slices.Contains(texts, w) {
					t.Errorf("the SVG does not draw %q; it draws %q", w, texts)
				}
			}
			f, err := os.Open(pngPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("not a valid PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
				t.Errorf("PNG of %v: too small to read", b)
			}
			if uniform(img) {
				t.Error("the PNG is blank")
			}
		})
	}
}

func uniform(img image.Image) bool {
	b := img.Bounds()
	r0, g0, b0, _ := img.At(b.Min.X, b.Min.Y).RGBA()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			if r, g, bb, _ := img.At(x, y).RGBA(); r != r0 || g != g0 || bb != b0 {
				return false
			}
		}
	}
	return true
}

func TestPlotFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--plot", "x.pdf"}, `--plot "x.pdf": want a .svg or .png file`},
		{[]string{"run", "--plot", "/no/such/dir/x.svg"}, "directory /no/such/dir does not exist"},
		{[]string{"validate", "--plot", "x.jpg"}, "want a .svg or .png file"},
		{[]string{"size", "--plot", "x"}, "want a .svg or .png file"},
	} {
		_, _, err := runCLI(t, tc.args...)
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}
