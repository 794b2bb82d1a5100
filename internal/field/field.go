// Package field names the input an error is about, so that a library can
// say which of its inputs to change without knowing how a command spells
// it (the CLI shows the field as its flag).
package field

import (
	"fmt"
	"math"
	"strconv"
)

// Error is an error about one input, named as the commands name its flag
// without dashes ("tokens", "max-open"), and the value given, if the
// error is about one.
type Error struct {
	Field, Value string
	Err          error
}

func (e *Error) Error() string {
	if e.Value != "" {
		return e.Field + " " + e.Value + ": " + e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap is the error without its field.
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error about field, its message formatted as fmt.Errorf
// does (%w wraps).
func Errorf(field, format string, args ...any) error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

// Valuef is an Error about the value v given to field.
func Valuef(field string, v any, format string, args ...any) error {
	return &Error{Field: field, Value: fmt.Sprint(v), Err: fmt.Errorf(format, args...)}
}

// Fields are the fields err's tree names, depth first, outermost first
// (through fmt.Errorf's %w and errors.Join alike).
func Fields(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *Error:
			out = append(out, e)
			walk(e.Err)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return out
}

// Float refuses a value of field that is NaN, infinite or outside
// [lo, hi] (hi +Inf: no upper bound): a float parser takes "NaN" and
// "Inf", which no bound holds back.
func Float(field string, v, lo, hi float64) error {
	if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= lo && v <= hi {
		return nil
	}
	num := func(x float64) string {
		if math.Abs(x) < 1e9 {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	want := "a finite number from " + num(lo) + " to " + num(hi)
	if math.IsInf(hi, 1) {
		want = "a finite number of at least " + num(lo)
	}
	return Valuef(field, v, "want %s", want)
}
