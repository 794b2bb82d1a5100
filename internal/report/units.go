package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The units every command prints figures in: one place for what a figure
// of each kind looks like, so that a table, a rejection reason and an
// error message write the same bytes alike.

// Sig3 is x at three significant digits with the zeros that carry them
// (10.0, 0.250), whole above 1,000; 0, NaN and infinities as Go prints
// them.
func Sig3(x float64) string {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	if math.Abs(x) >= 1000 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(x))))
	s := strconv.FormatFloat(x, 'f', max(d, 0), 64)
	if strings.Contains(s, ".") && len(strings.TrimLeft(strings.ReplaceAll(s, ".", ""), "-0")) > 3 {
		// Rounding carried into a new digit (9.996 → 10.00).
		s = strconv.FormatFloat(x, 'f', max(d-1, 0), 64)
	}
	return s
}

// Grouped is n with thousands separators: 131,072.
func Grouped(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return s
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// NumGrouped is v at three significant digits, whole numbers (and
// everything from 1,000 up) rounded and grouped: 0.25, 12.5, 1,024.
func NumGrouped(v float64) string {
	if v >= 1000 || v == math.Trunc(v) {
		return Grouped(int(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// GiB is b in binary gigabytes at three significant digits, no unit.
func GiB(b int64) string { return strconv.FormatFloat(float64(b)/(1<<30), 'g', 3, 64) }

// MiB is b in binary megabytes at three significant digits, no unit.
func MiB(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'g', 3, 64) }

// Bytes is b in the largest binary unit below it, one decimal: 1.5 GiB.
func Bytes(b int64) string {
	v := float64(b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"} {
		if v < 1024 || u == "PiB" {
			return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
		}
		v /= 1024
	}
	return ""
}

// GB is b in decimal gigabytes, as GPU memory is sold, with the binary
// size beside from a tebibyte up: 141 GB, 1.88 GB.
func GB(b int64) string {
	g, prec := float64(b)/1e9, 3
	switch {
	case g >= 100:
		prec = 0
	case g >= 10:
		prec = 1
	}
	s := strconv.FormatFloat(g, 'f', prec, 64) + " GB"
	if b >= 1<<40 {
		s += " (" + strconv.FormatFloat(float64(b)/(1<<40), 'f', 1, 64) + " TiB)"
	}
	return s
}

// Large is n in words from a million up, one decimal: 4.2 million.
func Large(n int64) string {
	switch {
	case n >= 1e12:
		return fmt.Sprintf("%.1f trillion", float64(n)/1e12)
	case n >= 1e9:
		return fmt.Sprintf("%.1f billion", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f million", float64(n)/1e6)
	}
	return strconv.FormatInt(n, 10)
}
