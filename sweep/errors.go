package sweep

import (
	"errors"

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
