package published

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/internal/field"
	"moebench/profile"
)

func TestChoose(t *testing.T) {
	t.Parallel()
	empty := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(empty, []byte(" \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		raw   = "../native/testdata/h200-raw.json"
		calib = "../native/testdata/h200-calibration.json"
		runs  = "testdata/deepep-h800.json"
	)
	for _, tc := range []struct {
		name, against, measured, profile string
		only                             bool
		kind                             Against
		from                             string // the measurement's file, for AgainstMeasured
		is                               error
		field, value                     string // the error's field and value, where it is a field's
	}{
		{name: "paper by default", against: "auto", kind: AgainstPaper},
		{name: "paper asked for", against: "paper", kind: AgainstPaper},
		{name: "paper beside a file", against: "paper", measured: raw, kind: AgainstPaper},
		{name: "a file", against: "auto", measured: raw, kind: AgainstMeasured, from: raw},
		{name: "the profile's calibration", against: "auto", profile: "p-ib," + calib, kind: AgainstMeasured, from: calib},
		{name: "a file over the profile's", against: "measured", profile: "p-ib," + calib, measured: raw, kind: AgainstMeasured, from: raw},
		{name: "a suite", against: "deepep", kind: AgainstSuite},
		{name: "a suite beside its runs", against: "deepep", measured: runs, kind: AgainstSuite},
		{name: "a suite with experiments", against: "deepep", only: true, kind: AgainstSuite, is: ErrSuiteOnly},
		{name: "no such reference", against: "bogus", is: ErrAgainst, field: "against", value: `"bogus"`},
		{name: "nothing measured", against: "measured", is: ErrNoMeasurement},
		{name: "runs for a measurement", against: "auto", measured: runs, is: ErrRunsFile},
		{name: "an empty file", against: "auto", measured: empty, is: ErrEmpty, field: "measured", value: empty},
		{name: "no file", against: "auto", measured: "testdata/none.json", is: os.ErrNotExist, field: "measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := tc.profile
			if spec == "" {
				spec = "p-ib"
			}
			p, err := profile.Load(spec)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Choose(tc.against, tc.only, tc.measured, p)
			if tc.is == nil && err != nil {
				t.Fatal(err)
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			var fe *field.Error
			if isField := errors.As(err, &fe); isField != (tc.field != "") || isField && (fe.Field != tc.field || fe.Value != tc.value) {
				t.Errorf("err = %v, want a field error of %q, value %q", err, tc.field, tc.value)
			}
			if err != nil && tc.is != ErrSuiteOnly {
				return
			}
			if ref.Kind != tc.kind {
				t.Errorf("kind %d, want %d", ref.Kind, tc.kind)
			}
			if tc.kind == AgainstSuite && ref.Suite.Name != "deepep" {
				t.Errorf("suite %q, want deepep", ref.Suite.Name)
			}
			if tc.kind == AgainstMeasured && (!strings.HasSuffix(ref.From, filepath.Base(tc.from)) || len(ref.Data) == 0) {
				t.Errorf("measurement from %q (%d bytes), want %s", ref.From, len(ref.Data), tc.from)
			}
		})
	}
	// The refusal of an unknown reference lists the suites.
	_, err := Choose("bogus", false, "", nil)
	if got, want := err.Error(), `against "bogus": want paper, measured, auto or a published suite (deepep)`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}
