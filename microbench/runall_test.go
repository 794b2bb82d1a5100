package microbench

import (
	"errors"
	"math"
	"testing"

	"moebench/internal/field"
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

// The model against the paper: every experiment's paper rows and their
// summary, or the named ones'; an unknown name is the field only's.
func TestAgainstPaper(t *testing.T) {
	t.Parallel()
	p, err := profile.Load("p-ib")
	if err != nil {
		t.Fatal(err)
	}
	rows, sum, err := AgainstPaper(p, []string{"ordering"})
	if err != nil || len(rows) == 0 || sum.Rows != len(rows) {
		t.Fatalf("ordering: %d rows, summary of %d, %v", len(rows), sum.Rows, err)
	}
	for _, r := range rows {
		if r.Experiment != "ordering" || !r.HasPaper() {
			t.Errorf("row %+v: want ordering's, with the paper's value", r)
		}
	}
	_, _, err = AgainstPaper(p, []string{"ordering", "nope"})
	if fs := field.Fields(err); len(fs) != 1 || fs[0].Field != "only" {
		t.Errorf("an unknown experiment: %v, want a field error of only", err)
	}
}
