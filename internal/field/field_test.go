package field_test

import (
	"errors"
	"fmt"
	"io"
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
