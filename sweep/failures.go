package sweep

import (
	"fmt"

	"moebench/fault"
	"moebench/moe"
)

// Failure is a phase of a layer that failed under its faults: a result,
// not an error, which the rows report and a command repeats.
type Failure struct {
	Preset string
	Group  bool // a replayed group's, Tokens on its busiest rank
	Tokens int
	Faults *fault.Plan
	Phase  string // dispatch or combine
	Err    *fault.Failure
}

func (f *Failure) String() string {
	if f.Group {
		return fmt.Sprintf("preset %s: a layer of %d tokens on the busiest rank failed under its faults (%s): %s: %v",
			f.Preset, f.Tokens, f.Faults, f.Phase, f.Err)
	}
	return fmt.Sprintf("preset %s: the layer failed under its faults (%s): %s: %v", f.Preset, f.Faults, f.Phase, f.Err)
}

// Failures are the phases of items that failed under their faults, in
// order: both of a layer's when its phases ran side by side.
func Failures(items []Item) []*Failure {
	var out []*Failure
	for _, it := range items {
		out = append(out, failures(it.Preset.Name, it.Result)...)
	}
	return out
}

// failures are the phases of r, on preset, that failed under its faults.
func failures(preset string, r *moe.Result) []*Failure {
	var out []*Failure
	for _, ph := range []struct {
		name string
		p    *moe.Phase
	}{{"dispatch", &r.Dispatch}, {"combine", &r.Combine}} {
		if ph.p.Failure != nil {
			out = append(out, &Failure{Preset: preset, Faults: r.Faults, Phase: ph.name, Err: ph.p.Failure})
		}
	}
	return out
}
