package sim

import (
	"fmt"
	"math"
)

// Time is virtual time in picoseconds.
type Time int64

// Units of virtual time.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Never is later than any event a model schedules.
const Never Time = math.MaxInt64

// Ns converts a duration in nanoseconds to Time, rounding to the nearest
// picosecond. Negative and non-finite inputs are programming errors: profile
// validation rejects them before they reach a model.
func Ns(ns float64) Time {
	if ns < 0 || math.IsNaN(ns) || math.IsInf(ns, 0) {
		panic(fmt.Sprintf("sim.Ns(%v): duration must be finite and non-negative", ns))
	}
	return Time(math.Round(ns * 1000))
}

// Us returns t in microseconds.
func (t Time) Us() float64 { return float64(t) / float64(Microsecond) }

// NsF returns t in nanoseconds.
func (t Time) NsF() float64 { return float64(t) / float64(Nanosecond) }

// String formats t with a unit that keeps three significant digits readable.
func (t Time) String() string {
	switch a := t; {
	case a < 0:
		return "-" + (-t).String()
	case a < Nanosecond:
		return fmt.Sprintf("%dps", int64(t))
	case a < Microsecond:
		return fmt.Sprintf("%.3gns", t.NsF())
	case a < Millisecond:
		return fmt.Sprintf("%.3gµs", t.Us())
	case a < 10*Second:
		return fmt.Sprintf("%.4gms", float64(t)/float64(Millisecond))
	case a < 10000*Second:
		return fmt.Sprintf("%.4gs", float64(t)/float64(Second))
	default:
		// Whole seconds: %g would turn to an exponent here.
		return fmt.Sprintf("%.0fs", float64(t)/float64(Second))
	}
}
