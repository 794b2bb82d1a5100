package traces_test

import (
	"errors"
	"math"
	"path/filepath"
	"testing"

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
