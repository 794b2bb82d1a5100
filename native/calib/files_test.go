package calib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"moebench/internal/field"
	nativelayer "moebench/native/layer"
	"moebench/profile"
)

// The fragment and the raw record are written both or neither; a file
// that cannot be written names its field.
func TestFilesWriteBothOrNeither(t *testing.T) {
	t.Parallel()
	frag := profile.File{Name: "calibration", Constants: []profile.Constant{{Name: "gpu.sm_clock_mhz", Value: 1980, Unit: "MHz", Source: "measured"}}}
	for _, tc := range []struct {
		name, out, raw string
		field          string // "": written
		wantRaw        bool
	}{
		{name: "both", out: "cal.json", raw: "raw.json", wantRaw: true},
		{name: "fragment alone", out: "cal.json"},
		{name: "raw unwritable", out: "cal.json", raw: "none/raw.json", field: "raw"},
		{name: "fragment unwritable", out: "none/cal.json", raw: "raw.json", field: "out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			f := Files{Out: filepath.Join(dir, tc.out)}
			if tc.raw != "" {
				f.Raw = filepath.Join(dir, tc.raw)
			}
			err := f.Write(frag, map[string]int{"runs": 3})
			var fe *field.Error
			switch {
			case tc.field == "" && err != nil:
				t.Fatal(err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("err = %v, want a field error of %s", err, tc.field)
			}
			_, outErr := os.Stat(f.Out)
			_, rawErr := os.Stat(filepath.Join(dir, "raw.json"))
			if written := tc.field == ""; (outErr == nil) != written || (rawErr == nil) != (written && tc.wantRaw) {
				t.Errorf("fragment written: %v, raw written: %v; want %v, %v", outErr == nil, rawErr == nil, written, written && tc.wantRaw)
			}
			if tc.field != "" {
				return
			}
			data, err := os.ReadFile(f.Out)
			if err != nil {
				t.Fatal(err)
			}
			back, err := profile.Parse(f.Out, data)
			if err != nil {
				t.Fatalf("fragment does not read back: %v\n%s", err, data)
			}
			if len(back.Constants) != 1 || back.Constants[0].Value != 1980 {
				t.Errorf("fragment read back: %+v", back.Constants)
			}
		})
	}
}

// The raw records read back from their files; a file missing, malformed
// or of another kind is a field error of from-raw, naming the file where
// it was read.
func TestReadRaw(t *testing.T) {
	t.Parallel()
	const (
		gpu     = "../testdata/h200-raw.json"
		compute = "../testdata/h100-compute-raw.json"
		ll      = "../testdata/h200-layer-raw.json"
		normal  = "../testdata/h200-layer-normal-raw.json"
		missing = "../testdata/none.json"
		notJSON = "../doc.go"
	)
	for _, tc := range []struct {
		name  string
		read  func() (string, error) // what was read, for the check
		want  string
		value string // the error's field value; "-": no error
		is    error
	}{
		{name: "gpu", read: func() (string, error) { m, err := ReadMeasured(gpu); return m.GPU, err }, want: "NVIDIA H200", value: "-"},
		{name: "gpu missing", read: func() (string, error) { _, err := ReadMeasured(missing); return "", err }},
		{name: "gpu not JSON", read: func() (string, error) { _, err := ReadMeasured(notJSON); return "", err }, value: notJSON},
		{name: "compute", read: func() (string, error) { m, err := ReadComputeMeasured(compute); return m.GPU, err }, want: "NVIDIA H100 80GB HBM3", value: "-"},
		{name: "compute missing", read: func() (string, error) { _, err := ReadComputeMeasured(missing); return "", err }},
		{name: "layer, two files merged", read: func() (string, error) {
			r, err := ReadLayer([]string{ll, normal})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s, %d runs", r.Device.Name, len(r.Runs)), nil
		}, want: "NVIDIA H200, 38 runs", value: "-"},
		{name: "layer of a GPU record", read: func() (string, error) { _, err := ReadLayer([]string{ll, gpu}); return "", err }, value: gpu, is: nativelayer.ErrNoLayer},
		{name: "layer missing", read: func() (string, error) { _, err := ReadLayer([]string{missing}); return "", err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.read()
			if tc.value == "-" {
				if err != nil || got != tc.want {
					t.Fatalf("read %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != "from-raw" || fe.Value != tc.value {
				t.Fatalf("err = %v, want a field error of from-raw, value %q", err, tc.value)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
		})
	}
}
