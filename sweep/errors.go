package sweep

import (
	"errors"
	"fmt"
	"strconv"

	"moebench/moe"
	"moebench/transport/preset"
)

// ErrInput marks an error whose cause is the caller's input (a shape, a
// list, a profile constant, a knob): errors.Is finds it in the chain, and
// it adds nothing to the error's text.
var ErrInput = errors.New("sweep: input")

type inputError struct{ err error }

func (e *inputError) Error() string        { return e.err.Error() }
func (e *inputError) Unwrap() error        { return e.err }
func (e *inputError) Is(target error) bool { return target == ErrInput }

// input marks err as the caller's input; nil stays nil.
func input(err error) error {
	if err == nil {
		return nil
	}
	return &inputError{err}
}

// CheckError is a layer's refusal of a point on a preset before it runs
// (moe.PrecheckWith): queues too shallow for the mode, a capacity or a
// library's limit exceeded, a field out of range. It is the caller's
// input; Err is the layer's error.
type CheckError struct {
	Point  Point
	Preset preset.Preset
	Err    error
}

func (e *CheckError) Error() string        { return "preset " + e.Preset.Name + ": " + e.Err.Error() }
func (e *CheckError) Unwrap() error        { return e.Err }
func (e *CheckError) Is(target error) bool { return target == ErrInput }

// Input is one input of a point, by its field name, with its value (""
// where the preset's own holds) and a note on how it counts.
type Input struct{ Field, Value, Note string }

// Culprits are the inputs of the point that set what a capacity error
// (a *moe.CapacityError in Err) exceeds: the shape's sizes for memory;
// for queues, the knob that sets them or the ranks, and in LL mode the
// experts with a queue to each peer; none for another error.
func (e *CheckError) Culprits() []Input {
	var ce *moe.CapacityError
	if !errors.As(e.Err, &ce) {
		return nil
	}
	s, in := e.Point.Shape, func(f string, v int) Input { return Input{Field: f, Value: strconv.Itoa(v)} }
	switch {
	case ce.Kind == moe.CapacityMemory && e.Point.Mode == moe.LL:
		return []Input{in("experts", s.Physical()), in("tokens", s.Tokens), in("hidden", s.Hidden)}
	case ce.Kind == moe.CapacityMemory:
		return []Input{in("hidden", s.Hidden), in("ranks", s.Ranks), in("gpus-per-node", s.GPUsPerNode)}
	case ce.Queues != "" && ce.Knob != "":
		return []Input{{Field: ce.Knob, Value: e.Point.Knobs[ce.Knob]}}
	case ce.Queues != "":
		return []Input{in("ranks", s.Ranks)}
	}
	if v, ok := e.Point.Knobs["qps-per-peer"]; ok {
		return []Input{in("ranks", s.Ranks), {Field: "qps-per-peer", Value: v}}
	}
	if e.Point.Mode == moe.LL {
		x := in("experts", s.Physical())
		x.Note = fmt.Sprintf(" (%d per rank, a QP to each peer for each)", s.LocalExperts())
		return []Input{in("ranks", s.Ranks), x}
	}
	return []Input{in("ranks", s.Ranks)}
}

// PointError is a refusal of one point among several, which it names.
type PointError struct {
	Point Point
	Err   error
}

func (e *PointError) Error() string { return e.Err.Error() }
func (e *PointError) Unwrap() error { return e.Err }
