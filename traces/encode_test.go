package traces_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"moebench/traces"
)

// failing is a source whose reads fail after its header.
type failing struct {
	traces.Reader
	err error
}

func (f failing) Next() (traces.Record, error) { return traces.Record{}, f.err }

func TestEncode(t *testing.T) {
	t.Parallel()
	o := traces.DefaultGenOptions()
	o.Experts, o.TopK, o.Layers, o.Ranks, o.TokensPerRank = 16, 2, 2, 2, 3
	for _, f := range []traces.Format{traces.FormatBinary, traces.FormatJSONL} {
		src, err := traces.Generate(o)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := traces.Encode(&buf, f, src); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		back, err := traces.NewReader(bytes.NewReader(buf.Bytes()), "buf")
		if err != nil {
			t.Fatalf("%s: reading back: %v", f, err)
		}
		want, _ := traces.Generate(o)
		for n := 0; ; n++ {
			got, gerr := back.Next()
			exp, werr := want.Next()
			if (gerr == nil) != (werr == nil) {
				t.Fatalf("%s: record %d: %v, want %v", f, n, gerr, werr)
			}
			if gerr != nil {
				break
			}
			if !got.Equal(exp) {
				t.Fatalf("%s: record %d differs", f, n)
			}
		}
	}
	src, _ := traces.Generate(o)
	cause := errors.New("disk on fire")
	err := traces.Encode(&bytes.Buffer{}, traces.FormatBinary, failing{src, cause})
	var se *traces.SourceError
	if !errors.As(err, &se) || !errors.Is(err, cause) {
		t.Errorf("a read error: %v, want a SourceError of it", err)
	}
}

func TestEncodedSize(t *testing.T) {
	t.Parallel()
	o := traces.GenOptions{Steps: 2, Layers: 3, Ranks: 4, TokensPerRank: 10, TopK: 8}
	for _, tc := range []struct {
		name    string
		weights bool
		f       traces.Format
		per     float64 // bytes an id
	}{
		{"binary", false, traces.FormatBinary, 4},
		{"binary with weights", true, traces.FormatBinary, 8},
		{"jsonl", false, traces.FormatJSONL, 8},
		{"jsonl with weights", true, traces.FormatJSONL, 16},
	} {
		o.Weights = tc.weights
		bytes, records := o.EncodedSize(tc.f)
		if want := 24 * (80*tc.per + 32); records != 24 || math.Abs(bytes-want) > 0 {
			t.Errorf("%s: %v bytes in %v records, want %v in 24", tc.name, bytes, records, want)
		}
	}
}
