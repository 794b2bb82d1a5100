package traces_test

import (
	"errors"
	"io"
	"testing"

	"moebench/traces"
)

// A trace in memory gives its header and each record once, in order,
// then io.EOF.
func TestMemory(t *testing.T) {
	t.Parallel()
	h := traces.Header{Version: 1, IDSpace: traces.Logical, Experts: 8, TopK: 2, EPSize: 2, Layers: 1}
	m := &traces.Memory{H: h, Records: []traces.Record{{Rank: 0}, {Rank: 1}}}
	var r traces.Reader = m
	if got := r.Header(); got.Experts != 8 || got.EPSize != 2 {
		t.Errorf("header %+v", got)
	}
	for want := 0; want < 2; want++ {
		rec, err := r.Next()
		if err != nil || rec.Rank != want {
			t.Fatalf("record %d: %+v, %v", want, rec, err)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last record: %v, want io.EOF", err)
	}
}
