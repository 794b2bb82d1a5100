package field_test

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	"moebench/internal/field"
)

func TestFields(t *testing.T) {
	inner := field.Errorf("topk", "counts.npy carries no top-k: %w", io.ErrUnexpectedEOF)
	err := fmt.Errorf("import: %w", field.Errorf("trace", "r.bin: %w", inner))
	if got, want := err.Error(), "import: trace: r.bin: topk: counts.npy carries no top-k: unexpected EOF"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	fs := field.Fields(err)
	if len(fs) != 2 || fs[0].Field != "trace" || fs[1].Field != "topk" {
		t.Fatalf("Fields = %v", fs)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("the cause is not in the chain")
	}
	if got, want := field.Valuef("num-sms", 40, "at most %d", 16).Error(), "num-sms 40: at most 16"; got != want {
		t.Errorf("Valuef: %q, want %q", got, want)
	}
	if fs := field.Fields(errors.Join(field.Errorf("tokens", "0"), io.EOF, field.Errorf("hidden", "7"))); len(fs) != 2 || fs[1].Field != "hidden" {
		t.Errorf("joined: %v", fs)
	}
	if field.Fields(io.EOF) != nil {
		t.Error("a plain error names a field")
	}
}

func TestFloat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v, lo, hi float64
		want      string // "" for none
	}{
		{0.5, 0, 1, ""},
		{0, 0, 1, ""},
		{1.5, 0, 1, "drift 1.5: want a finite number from 0 to 1"},
		{math.NaN(), 0, 1, "drift NaN: want a finite number from 0 to 1"},
		{math.Inf(1), 0, math.Inf(1), "drift +Inf: want a finite number of at least 0"},
		{-1, 0, 1e12, "drift -1: want a finite number from 0 to 1e+12"},
		{5e9, 0, 1e12, ""},
	} {
		err := field.Float("drift", tc.v, tc.lo, tc.hi)
		got := ""
		if err != nil {
			got = err.Error()
			if fs := field.Fields(err); len(fs) != 1 || fs[0].Field != "drift" {
				t.Errorf("%v: names %v", tc.v, fs)
			}
		}
		if got != tc.want {
			t.Errorf("%v in [%v, %v]: %q, want %q", tc.v, tc.lo, tc.hi, got, tc.want)
		}
	}
}
