package microbench

import (
	"errors"
	"math"
	"testing"

	"moebench/profile"
)

func TestRunAllKeepsThePaperRowsAndNamesAFailure(t *testing.T) {
	t.Parallel()
	row := func(paper float64) Row { return Row{Paper: paper} }
	fixed := Experiment{Name: "fixed", Run: func(*profile.Profile) ([]Row, error) {
		return []Row{row(1), row(math.NaN()), row(2)}, nil
	}}
	boom := errors.New("boom")
	failing := Experiment{Name: "failing", Run: func(*profile.Profile) ([]Row, error) { return nil, boom }}
	for _, tc := range []struct {
		name      string
		exps      []Experiment
		paperOnly bool
		want      int
		err       string
	}{
		{"all rows", []Experiment{fixed, fixed}, false, 6, ""},
		{"paper rows", []Experiment{fixed, fixed}, true, 4, ""},
		{"a failure", []Experiment{fixed, failing}, true, 0, "experiment failing: boom"},
	} {
		rows, err := RunAll(nil, tc.exps, tc.paperOnly)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err || !errors.Is(err, boom)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || len(rows) != tc.want):
			t.Errorf("%s: %d rows (%v), want %d", tc.name, len(rows), err, tc.want)
		}
	}
}
