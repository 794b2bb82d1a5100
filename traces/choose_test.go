package traces_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"moebench/internal/field"
	"moebench/traces"
)

func TestOutputFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, format, path string
		want               traces.Format
		err                string // "" for none
	}{
		{"extension jsonl", "", "r.jsonl", "jsonl", ""},
		{"extension ndjson", "", "R.NDJSON", "jsonl", ""},
		{"other extension is binary", "", "r.trace", "bin", ""},
		{"named over the extension", "bin", "r.jsonl", "bin", ""},
		{"stdout is jsonl", "", "-", "jsonl", ""},
		{"stdout jsonl named", "jsonl", "-", "jsonl", ""},
		{"stdout binary", "bin", "-", "", "standard output takes JSON lines only; the binary form goes to a file"},
		{"unknown name", "npy", "r.bin", "", `format "npy" is not one of bin, jsonl`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := traces.OutputFormat(tc.format, tc.path)
			if msg(err) != tc.err || got != tc.want {
				t.Errorf("OutputFormat(%q, %q) = %q, %q; want %q, %q", tc.format, tc.path, got, msg(err), tc.want, tc.err)
			}
		})
	}
	if _, err := traces.OutputFormat("bin", "-"); !errors.Is(err, traces.ErrStdoutBinary) {
		t.Errorf("binary to stdout: %v, want ErrStdoutBinary", err)
	}
}

func TestImportFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from, layout string
		format       traces.Format
		wantLayout   traces.Layout
		err          string
	}{
		{"", "", "", "", ""},
		{"npz", "tokens-first", "npz", "tokens-first", ""},
		{"sglang-stat-csv", "layers-first", "sglang-stat-csv", "layers-first", ""},
		{"eplb", "", "eplb", "", ""},
		{"csv", "", "", "", `from "csv" is not one of npy, npz, sglang-stat-csv, eplb, jsonl, bin`},
		{"npy", "rows", "", "", `layout "rows" is not layers-first or tokens-first`},
		// The format is checked first.
		{"x", "y", "", "", `from "x" is not one of npy, npz, sglang-stat-csv, eplb, jsonl, bin`},
	} {
		f, l, err := traces.ImportFormat(tc.from, tc.layout)
		if msg(err) != tc.err || f != tc.format || l != tc.wantLayout {
			t.Errorf("ImportFormat(%q, %q) = %q, %q, %q; want %q, %q, %q", tc.from, tc.layout, f, l, msg(err), tc.format, tc.wantLayout, tc.err)
		}
		var ce *traces.ChoiceError
		if tc.err != "" && !errors.As(err, &ce) {
			t.Errorf("ImportFormat(%q, %q): %T, want a ChoiceError", tc.from, tc.layout, err)
		}
	}
}

func TestCheckSpace(t *testing.T) {
	t.Parallel()
	small := traces.DefaultGenOptions()
	huge := small
	huge.Steps, huge.Layers, huge.Ranks, huge.TokensPerRank = math.MaxInt32, math.MaxInt32, math.MaxInt32, math.MaxInt32
	path := filepath.Join(t.TempDir(), "r.bin")
	if err := small.CheckSpace(traces.FormatBinary, path); err != nil {
		t.Errorf("the default trace: %v", err)
	}
	// Standard output's free space cannot be told: nothing is refused.
	if err := huge.CheckSpace(traces.FormatJSONL, "-"); err != nil {
		t.Errorf("to stdout: %v", err)
	}
	var se *traces.SpaceError
	if err := huge.CheckSpace(traces.FormatBinary, path); !errors.As(err, &se) {
		t.Skipf("no free space to tell here: %v", err)
	}
	// 2^31-1 each of steps, layers and ranks: about 9.9e27 records, far
	// past int64's bytes, which the error holds at its largest.
	if se.Bytes != math.MaxInt64 || se.Path != path || se.Free <= 0 || se.Records < 9.9e27 || se.Records > 1e28 {
		t.Errorf("SpaceError = %+v", se)
	}
}

func msg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Resolve refuses the first wrong input in its order, naming it, and
// otherwise sets the routing and returns the format.
func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		edit               func(*traces.GenOptions)
		spec, format, path string
		want               traces.Format
		field, err         string // the field refused and the message, "" for none
	}{
		{name: "defaults", spec: "uniform", path: "r.bin", want: "bin"},
		{name: "stdout", spec: "powerlaw:1.2", path: "-", want: "jsonl"},
		{name: "drift", edit: func(d *traces.GenOptions) { d.Drift = 2 }, spec: "x", path: "r.bin",
			field: "drift", err: "drift 2: want a finite number from 0 to 1"},
		{name: "routing", spec: "x", path: "r.bin", field: "routing"},
		{name: "layer", edit: func(d *traces.GenOptions) { d.TopK = 300 }, spec: "uniform", format: "xml", path: "r.bin", field: "topk"},
		{name: "format", spec: "uniform", format: "xml", path: "-", err: `format "xml" is not one of bin, jsonl`},
		{name: "binary to stdout", spec: "uniform", format: "bin", path: "-",
			err: "standard output takes JSON lines only; the binary form goes to a file"},
	} {
		d := traces.DefaultGenOptions()
		if tc.edit != nil {
			tc.edit(&d)
		}
		f, err := d.Resolve(tc.spec, tc.format, tc.path)
		fs := field.Fields(err)
		switch {
		case tc.field == "" && tc.err == "":
			if err != nil || f != tc.want {
				t.Errorf("%s: %q, %v; want %q", tc.name, f, err, tc.want)
			}
		case tc.field != "" && (len(fs) == 0 || fs[0].Field != tc.field):
			t.Errorf("%s: %v names %v, want %s", tc.name, err, fs, tc.field)
		case tc.err != "" && msg(err) != tc.err:
			t.Errorf("%s: %q, want %q", tc.name, msg(err), tc.err)
		}
	}
	d := traces.DefaultGenOptions()
	if _, err := d.Resolve("powerlaw:1.2", "", "r.bin"); err != nil || d.Routing.String() != "powerlaw:1.2" {
		t.Errorf("the routing set: %v, %v", d.Routing, err)
	}
}

// EncodePath writes to stdout for "-", else the file, the same bytes.
func TestEncodePath(t *testing.T) {
	t.Parallel()
	o := traces.DefaultGenOptions()
	o.Layers, o.Ranks, o.TokensPerRank = 1, 2, 2
	var stdout bytes.Buffer
	path := filepath.Join(t.TempDir(), "r.jsonl")
	for _, p := range []string{"-", path} {
		src, err := traces.Generate(o)
		if err != nil {
			t.Fatal(err)
		}
		if err := traces.EncodePath(p, traces.FormatJSONL, src, &stdout); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if stdout.Len() == 0 || !bytes.Equal(file, stdout.Bytes()) {
		t.Errorf("stdout %d B, the file %d B: want the same trace", stdout.Len(), len(file))
	}
}
