package published

import (
	"errors"
	"testing"

	"moebench/internal/report"
	"moebench/results"
)

// Each configuration runs once, and each row reads its own phase's
// metric from that run.
func TestPredictRunsEachConfigurationOnce(t *testing.T) {
	t.Parallel()
	s := DeepEP()
	calls := 0
	fake := func(r Row) (results.Run, error) {
		calls++
		// Figures that say which configuration and metric they are.
		v := float64(r.Conditions.Ranks)
		return results.Run{Dispatch: results.Phase{MeanUs: v, DeepEPGBps: v + 0.5, BoundBy: "port"},
			Combine: results.Phase{MeanUs: v + 0.25, DeepEPGBps: v + 0.75, BoundBy: "queue"}}, nil
	}
	preds, err := Predict(s.Rows, fake)
	if err != nil {
		t.Fatal(err)
	}
	// The suite's rows: a dispatch and a combine figure for each of 14
	// configurations.
	if want := len(s.Rows) / 2; calls != want {
		t.Errorf("%d runs for %d rows, want %d", calls, len(s.Rows), want)
	}
	for i, r := range s.Rows {
		want := map[string]float64{"dispatch" + MeanUs: 0, "combine" + MeanUs: 0.25, "dispatch" + DeepEPGBps: 0.5, "combine" + DeepEPGBps: 0.75}[r.Phase+r.Metric]
		want += float64(r.Conditions.Ranks)
		bound := map[string]string{"dispatch": "port", "combine": "queue"}[r.Phase]
		if preds[i].Model != want || preds[i].BoundBy != bound {
			t.Errorf("row %d (%s %s %s): %+v, want %v bound by %s", i, r.Case, r.Phase, r.Metric, preds[i], want, bound)
		}
	}
	doc := s.Validate(report.Header{}, preds)
	if got := doc.Rows[0]["case"]; got != "EP8, bound by port" {
		t.Errorf("first case %q, want its binding cause named", got)
	}
	boom := errors.New("boom")
	if _, err := Predict(s.Rows, func(Row) (results.Run, error) { return results.Run{}, boom }); !errors.Is(err, boom) {
		t.Errorf("a failed run: %v, want it returned", err)
	}
}

// A user's run is beside the suite's figure of the same conditions, and
// NaN where the suite has none.
func TestValidateRunsMatchesTheSuite(t *testing.T) {
	t.Parallel()
	s := DeepEP()
	other := s.Rows[0]
	other.Conditions.Tokens = 3
	runs := Runs{Platform: "here", Rows: []Row{s.Rows[0], other}}
	doc := s.ValidateRuns(report.Header{}, runs, "runs.json", []Prediction{{1, "port"}, {2, "queue"}})
	if got := doc.Rows[0]["deepep"]; got != s.Rows[0].Value {
		t.Errorf("published beside the suite's own conditions: %v, want %v", got, s.Rows[0].Value)
	}
	if got := doc.Rows[1]["deepep"]; got != nil {
		t.Errorf("published beside conditions the suite lacks: %v, want none", got)
	}
	if got := doc.Header.Extra[0]; got != `measured on "here"` {
		t.Errorf("first note %q", got)
	}
}
