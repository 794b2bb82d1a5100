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

// The axes are ticked where the data are: a sweep of ranks at each rank
// it ran, a replay's layers and ranks at whole numbers.
func TestPlotTicks(t *testing.T) {
	t.Parallel()
	trace := filepath.Join("testdata", "replay", "rank-major.jsonl")
	for _, tc := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"sweep over powers of two", []string{"sweep", "--ranks", "8,16,32,64", "--gpus-per-node", "4", "--tokens", "2", "--transport", "mini-gda"},
			[]string{"8", "16", "32", "64"}, []string{"10", "20", "50"}},
		{"replay of two layers on two ranks", []string{"replay", "--trace", trace, "--transport", "mini-gda"},
			[]string{"0", "1", "11", "12"}, []string{"0.5", "11.5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "p.svg")
			if _, _, err := runCLI(t, append(tc.args, "--plot", p)...); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			texts := svgTexts(t, data)
			for _, w := range tc.want {
				if !slices.Contains(texts, w) {
					t.Errorf("no tick labelled %q; the SVG draws %q", w, texts)
				}
			}
			for _, n := range tc.not {
				if slices.Contains(texts, n) {
					t.Errorf("a tick labelled %q; the SVG draws %q", n, texts)
				}
			}
		})
	}
}

// A study with nothing to draw is refused, naming --plot, before any
// output is written.
func TestEmptyPlotRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string
		files map[string]string
	}{
		{"size with no candidate modelled", []string{"size", "--ranks", "8", "--gpus-per-node", "4", "--experts", "16", "--tokens", "8", "--transport", "mini-gda", "--max-buffer-gib", "0.0001"}, nil},
		{"validate with no measured row", []string{"validate", "--measured", "m.json"}, map[string]string{"m.json": `{"issue_ns": {"no-such-mode": 100}}`}},
		{"validate with no positive row", []string{"validate", "--measured", "m.json"}, map[string]string{"m.json": `{"issue_ns": {"gpu-fence": 0}}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := slices.Clone(tc.args)
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				for i := range args {
					if args[i] == name {
						args[i] = p
					}
				}
			}
			plotPath, out := filepath.Join(dir, "p.png"), filepath.Join(dir, "out.txt")
			_, _, err := runCLI(t, append(args, "--plot", plotPath, "--out", out)...)
			if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--plot "+plotPath+": nothing to draw") {
				t.Fatalf("error %v, want a run error naming --plot", err)
			}
			for _, p := range []string{plotPath, out} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s written (%v)", filepath.Base(p), err)
				}
			}
		})
	}
}
