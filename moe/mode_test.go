package moe_test

import (
	"errors"
	"testing"

	"moebench/internal/field"
	"moebench/moe"
)

// A chunk is refused only when given and no normal mode runs, as the
// chunk field's error.
func TestCheckChunk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		given  bool
		modes  []moe.Mode
		refuse bool
	}{
		{"not given, LL", false, []moe.Mode{moe.LL}, false},
		{"given, LL", true, []moe.Mode{moe.LL}, true},
		{"given, no mode", true, nil, true},
		{"given, normal", true, []moe.Mode{moe.Normal}, false},
		{"given, both", true, []moe.Mode{moe.LL, moe.Normal}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := moe.CheckChunk(tc.given, tc.modes...)
			if (err != nil) != tc.refuse {
				t.Fatalf("CheckChunk = %v, want refused %v", err, tc.refuse)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, moe.ErrChunkMode) {
				t.Errorf("%v is not ErrChunkMode", err)
			}
			if fs := field.Fields(err); len(fs) != 1 || fs[0].Field != "chunk" {
				t.Errorf("fields %v, want chunk", fs)
			}
			if got, want := err.Error(), "chunk: only normal mode writes in chunks"; got != want {
				t.Errorf("%q, want %q", got, want)
			}
		})
	}
}
