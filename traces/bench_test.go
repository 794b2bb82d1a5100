package traces

import (
	"bytes"
	"io"
	"testing"

	"moebench/routing"
)

// benchTrace is one DeepSeek-V3-like decode step on 32 ranks: 61 layers ×
// 32 ranks × 128 tokens × top-8.
func benchTrace(b *testing.B, weights bool) (Header, []Record) {
	o := DefaultGenOptions()
	o.Layers, o.Ranks, o.TokensPerRank, o.Weights = 61, 32, 128, weights
	return genRecords(b, o)
}

func BenchmarkWriteBinary(b *testing.B) {
	h, recs := benchTrace(b, true)
	size := len(encode(b, FormatBinary, h, recs))
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		w, _ := NewBinaryWriter(io.Discard, h)
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		w.Close()
	}
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkReadBinary(b *testing.B) {
	h, recs := benchTrace(b, true)
	data := encode(b, FormatBinary, h, recs)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	rd := bytes.NewReader(data)
	for b.Loop() {
		rd.Reset(data)
		r, err := NewBinaryReader(rd, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := r.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkReadJSONL(b *testing.B) {
	h, recs := benchTrace(b, false)
	data := encode(b, FormatJSONL, h, recs)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewJSONLReader(bytes.NewReader(data), "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := drainNoClone(r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkGenerate(b *testing.B) {
	o := DefaultGenOptions()
	o.Layers, o.Ranks, o.TokensPerRank = 61, 32, 128
	o.Routing = routing.Spec{Kind: routing.PowerLaw, Alpha: 1.2}
	b.ReportAllocs()
	for b.Loop() {
		r, _ := Generate(o)
		if _, err := drainNoClone(r); err != nil {
			b.Fatal(err)
		}
	}
}

func drainNoClone(r Reader) (int, error) {
	n := 0
	for {
		if _, err := r.Next(); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		n++
	}
}
