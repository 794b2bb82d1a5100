package results_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"moebench/internal/report"
	"moebench/moe"
	"moebench/results"
)

// sampleLayer is a sweep of two runs with figures chosen by hand.
func sampleLayer() *results.Layer {
	run := func(preset string, qps string, dispatch, combine float64) results.Run {
		r := &moe.Result{Mode: moe.LL, Shape: moe.Shape{Ranks: 16, GPUsPerNode: 8, Tokens: 128, Experts: 256, TopK: 8, Hidden: 7168},
			RouteHash: "abc", Correct: true, BoundBy: "egress"}
		r.Dispatch.Time = moe.Summary{Mean: dispatch, P50: dispatch, P99: dispatch, Max: dispatch}
		r.Combine.Time = moe.Summary{Mean: combine, P50: combine, P99: combine, Max: combine}
		r.Dispatch.Breakdown[moe.CauseEgress], r.Combine.Breakdown[moe.CauseEgress] = dispatch, combine
		r.Dispatch.BoundBy, r.Combine.BoundBy = "egress", "egress"
		return results.RunOf(r, results.RunInfo{Preset: preset, Mechanism: "mini-gda", Workload: "deepseek-v3",
			Swept: []results.Knob{{Name: "qps/peer", Value: qps}}})
	}
	return &results.Layer{Header: report.Header{Tool: "moebench", Command: "sweep", Figures: "modelled"},
		Results: []results.Run{run("deepep-v1", "1", 123.456, 234.5), run("deepep-v1", "4", 61.7, 117)}}
}

// The table shows each phase at three significant digits under the
// swept knob's column, and the JSON carries the workload the run named.
func TestLayerRenders(t *testing.T) {
	t.Parallel()
	d := sampleLayer()
	for _, tc := range []struct {
		format string
		want   []string
	}{
		{"table", []string{"qps/peer  preset", "       1  deepep-v1  mini-gda   dispatch      123     123", "       4  deepep-v1  mini-gda   combine       117"}},
		{"csv", []string{"deepep-v1,mini-gda,ll,16,8,128,256,8,7168,", ",dispatch,123.456,"}},
		{"json", []string{`"workload": "deepseek-v3"`, `"swept": {`, `"qps/peer": "4"`}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if err := results.Render(&b, tc.format, d); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("%s lacks %q:\n%s", tc.format, w, b.String())
				}
			}
		})
	}
}

// A document read back from its JSON draws the figure the one computed
// draws: plots and the report page read documents, not the text.
func TestLayerRoundTrip(t *testing.T) {
	t.Parallel()
	d := sampleLayer()
	var b bytes.Buffer
	if err := results.Render(&b, "json", d); err != nil {
		t.Fatal(err)
	}
	var back results.Layer
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Figure(), d.Figure(); !reflect.DeepEqual(got, want) {
		t.Errorf("figure of the JSON read back:\n%+v\nof the document:\n%+v", got, want)
	}
	pn := d.Figure().Panels[0]
	if len(pn.Series) != 1 || !reflect.DeepEqual(pn.Series[0].X, []float64{1, 4}) || !reflect.DeepEqual(pn.Series[0].Y, []float64{123.456 + 234.5, 61.7 + 117}) {
		t.Errorf("sweep figure: %+v, want one series of the layer time at 1 and 4 QPs", pn.Series)
	}
}

// A prediction rests on one correct run: none, two, or one whose checks
// failed is refused.
func TestLayerOne(t *testing.T) {
	t.Parallel()
	good, bad := results.Run{Correct: true, Transport: "mini-gda"}, results.Run{Problems: []string{"token 3 lost"}}
	for _, tc := range []struct {
		name string
		runs []results.Run
		want string // the refusal, "" for none
	}{
		{"one correct run", []results.Run{good}, ""},
		{"none", nil, "0 results, want one"},
		{"two", []results.Run{good, good}, "2 results, want one"},
		{"one whose checks failed", []results.Run{bad}, "the layer's checks failed: [token 3 lost]"},
	} {
		r, err := (&results.Layer{Results: tc.runs}).One()
		switch {
		case tc.want == "" && (err != nil || r.Transport != "mini-gda"):
			t.Errorf("%s: %+v, %v", tc.name, r, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
