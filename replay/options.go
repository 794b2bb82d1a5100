package replay

import (
	"fmt"

	"moebench/internal/field"
	"moebench/moe"
	"moebench/profile"
	"moebench/transport/preset"
	"moebench/workloads"
)

// Options is a replay as its caller asks for it before the trace is read:
// the layer around the trace and what of the trace's header to override.
// A pointer left nil, or a count left 0, takes the trace's value, else the
// workload's.
type Options struct {
	// Name is the trace, for messages.
	Name string
	// Workload gives the hidden size, the element types (its Shape's, which
	// the caller may have changed) and the group limit.
	Workload workloads.Workload
	Mode     moe.Mode
	// Background is the traffic beside the layer, for the header (the
	// caller's run puts it there).
	Background moe.Background
	// NVLink, when nil, is on in normal mode and where an NVLink domain
	// spans hosts.
	NVLink *bool
	// Ranks and GPUsPerNode shape the layer; 0 takes the trace's.
	Ranks, GPUsPerNode int
	Hidden             *int
	// TopK and Experts, when given, must be the trace's.
	TopK, Experts *int
	// Chunk is normal mode's write in tokens (0: DeepEP's), checked
	// against the layer's largest message; NumSMs the kernels' SMs (0:
	// DeepEP's), checked by the caller's run.
	Chunk, NumSMs int
	// Limit is the group limit the caller gives; nil checks the workload's
	// when the trace has the workload's expert count (the same model).
	Limit *moe.GroupLimit
	// Steps replays only steps below it, MaxLayers stops after that many
	// groups (0: no limit); MaxOpen groups may wait for records at once.
	Steps, MaxLayers, MaxOpen int
	Profile                   *profile.Profile
	Presets                   []preset.Preset
	// Notes go into the header's account after the group limit (the
	// faults, say).
	Notes []string
	// Spell names an input in prose as the caller shows it ("ranks" as
	// "--ranks"); nil names it by its field.
	Spell func(field string) string
}

// Check refuses options out of range, before any trace is read. The
// counts must be 0 (take the trace's or the workload's) or more.
func (o *Options) Check() error {
	for _, c := range []struct {
		name string
		v    int
		what string
	}{
		{"num-sms", o.NumSMs, "0 (DeepEP's choice) or more"},
		{"chunk", o.Chunk, "0 (16 tokens) or more"}, {"steps", o.Steps, "0 (every step) or more"},
		{"max-layers", o.MaxLayers, "0 (all) or more"}, {"ranks", o.Ranks, "0 (the trace's) or more"},
		{"gpus-per-node", o.GPUsPerNode, "0 (the trace's) or more"}, {"hidden", deref(o.Hidden), "0 (the workload's) or more"},
		{"topk", deref(o.TopK), "0 (the trace's) or more"}, {"experts", deref(o.Experts), "0 (the trace's) or more"},
	} {
		if c.v < 0 {
			return &inputErr{field.Valuef(c.name, c.v, "must be %s", c.what)}
		}
	}
	if o.MaxOpen < 1 {
		return &inputErr{field.Valuef("max-open", o.MaxOpen, "must be at least 1")}
	}
	return nil
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// spell is field as the caller names it.
func (o *Options) spell(f string) string {
	if o.Spell == nil {
		return f
	}
	return o.Spell(f)
}

// inputErr is an ErrInput with its message as given.
type inputErr struct{ err error }

func (e *inputErr) Error() string        { return e.err.Error() }
func (e *inputErr) Unwrap() error        { return e.err }
func (e *inputErr) Is(target error) bool { return target == ErrInput }

// inputf is an ErrInput formatted as fmt.Errorf does.
func inputf(format string, args ...any) error { return &inputErr{fmt.Errorf(format, args...)} }
