package sweep_test

import (
	"strings"
	"testing"

	"moebench/fault"
	"moebench/moe"
	"moebench/sweep"
)

// Every failed phase is reported, in order, both of a layer whose phases
// ran side by side; a healthy layer reports none.
func TestFailures(t *testing.T) {
	t.Parallel()
	gda, proxy := presets(t, "mini-gda")[0], presets(t, "mini-proxy")[0]
	plan := &fault.Plan{Seed: 3}
	both := &moe.Result{Faults: plan}
	both.Dispatch.Failure, both.Combine.Failure = &fault.Failure{Mechanism: "a"}, &fault.Failure{Mechanism: "b"}
	combine := &moe.Result{Faults: plan}
	combine.Combine.Failure = &fault.Failure{Mechanism: "c"}
	items := []sweep.Item{{Preset: gda, Result: &moe.Result{}}, {Preset: gda, Result: both}, {Preset: proxy, Result: combine}}
	got := sweep.Failures(items)
	want := []struct{ preset, phase, mech string }{{"mini-gda", "dispatch", "a"}, {"mini-gda", "combine", "b"}, {"mini-proxy", "combine", "c"}}
	if len(got) != len(want) {
		t.Fatalf("%d failures, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		if g := got[i]; g.Preset != w.preset || g.Phase != w.phase || g.Err.Mechanism != w.mech || g.Faults != plan || g.Group {
			t.Errorf("failure %d = %+v, want %v", i, g, w)
		}
	}
	if s := got[0].String(); !strings.HasPrefix(s, "preset mini-gda: the layer failed under its faults (") || !strings.Contains(s, "): dispatch: ") {
		t.Errorf("a run's failure reads %q", s)
	}
	g := *got[0]
	g.Group, g.Tokens = true, 37
	if s := g.String(); !strings.HasPrefix(s, "preset mini-gda: a layer of 37 tokens on the busiest rank failed under its faults (") {
		t.Errorf("a replayed group's failure reads %q", s)
	}
}
