package moe

import (
	"reflect"
	"testing"
)

// Every mode names each of its differences: a nil entry would panic at
// the first layer of the mode rather than fail here.
func TestModeEntriesComplete(t *testing.T) {
	t.Parallel()
	for _, m := range []Mode{LL, Normal} {
		v := reflect.ValueOf(modes[m])
		for i := range v.NumField() {
			if f := v.Field(i); f.Kind() == reflect.Func && f.IsNil() {
				t.Errorf("mode %v: %s is nil", m, v.Type().Field(i).Name)
			}
		}
	}
}

func TestModeString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m    Mode
		want string
	}{{LL, "ll"}, {Normal, "normal"}, {0, "Mode(0)"}, {7, "Mode(7)"}} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("Mode(%d).String() = %q, want %q", uint8(tc.m), got, tc.want)
		}
	}
}
