package traces

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	phys := Header{Version: Version, IDSpace: Physical, Experts: 4, PhysicalExperts: 6, TopK: 2, Layers: 2,
		PhysicalToLogical: [][]int32{{0, 1, 2, 3, 0, 1}, {3, 2, 1, 0, 3, 3}}, Provenance: "hand made ✓", EPSize: 3}
	physRecs := []Record{
		{Step: 0, Layer: 0, Rank: -1, TopkIdx: []int32{5, -1, 0, 1}, TopkWeights: []float32{float32(math.Copysign(0, -1)), 1e-45, math.MaxFloat32, 0.1}},
		{Step: 7, Layer: 1, Rank: 2, TopkIdx: []int32{}},
		{Step: 7, Layer: 1, Rank: 2, TopkIdx: []int32{}, TopkWeights: []float32{}},
	}
	gh, grecs := genRecords(t, smallGen())
	for _, tc := range []struct {
		name string
		h    Header
		recs []Record
	}{
		{"generated", gh, grecs},
		{"physical edge values", phys, physRecs},
	} {
		for _, f := range []Format{FormatBinary, FormatJSONL} {
			t.Run(tc.name+"/"+string(f), func(t *testing.T) {
				t.Parallel()
				data := encode(t, f, tc.h, tc.recs)
				r, err := NewReader(bytes.NewReader(data), "x")
				if err != nil {
					t.Fatal(err)
				}
				sameRecords(t, readAll(t, r), tc.recs)
				// Re-encode in the other form and back: still identical.
				other := FormatJSONL
				if f == FormatJSONL {
					other = FormatBinary
				}
				r2, _ := NewReader(bytes.NewReader(encode(t, other, r.Header(), tc.recs)), "y")
				back := encode(t, f, r2.Header(), readAll(t, r2))
				if !bytes.Equal(back, data) {
					t.Fatalf("%s → %s → %s is not byte-identical", f, other, f)
				}
			})
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	t.Parallel()
	h, recs := genRecords(t, smallGen())
	h2, recs2 := genRecords(t, smallGen())
	a, b := encode(t, FormatBinary, h, recs), encode(t, FormatBinary, h2, recs2)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different bytes")
	}
	o := smallGen()
	o.Seed++
	h3, recs3 := genRecords(t, o)
	if bytes.Equal(a, encode(t, FormatBinary, h3, recs3)) {
		t.Fatal("different seeds, same bytes")
	}
}

// TestBinaryTruncated cuts a file at every byte: each cut must be an error,
// never a silent short read.
func TestBinaryTruncated(t *testing.T) {
	t.Parallel()
	o := smallGen()
	o.Steps, o.Layers = 1, 2
	h, recs := genRecords(t, o)
	data := encode(t, FormatBinary, h, recs)
	for n := range len(data) {
		r, err := NewBinaryReader(bytes.NewReader(data[:n]), "cut.bin")
		if err == nil {
			_, err = drain(r)
		}
		if err == nil {
			t.Fatalf("cut at %d of %d bytes: no error", n, len(data))
		}
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v does not wrap ErrTruncated", n, err)
		}
		if !strings.HasPrefix(err.Error(), "cut.bin: ") {
			t.Fatalf("cut at %d: error %q does not name the file", n, err)
		}
	}
}

func TestBinaryCorrupt(t *testing.T) {
	t.Parallel()
	h, recs := genRecords(t, smallGen())
	data := encode(t, FormatBinary, h, recs)
	hdrEnd := preambleSize + int(binary.LittleEndian.Uint32(data[12:])) + 4
	for i := range len(data) {
		bad := bytes.Clone(data)
		bad[i] ^= 0x10
		r, err := NewBinaryReader(bytes.NewReader(bad), "bad.bin")
		if err == nil {
			_, err = drain(r)
		}
		if err == nil {
			t.Fatalf("flipped byte %d: no error", i)
		}
		if i >= hdrEnd && !strings.Contains(err.Error(), "bad.bin: record ") {
			t.Fatalf("flipped byte %d: error %q does not name the record", i, err)
		}
	}
	// One precise case: the second record's payload.
	bad := bytes.Clone(data)
	blk := hdrEnd + recordHeadSize + 4*5*4*2 + 4
	bad[blk+recordHeadSize+3] ^= 1
	r, _ := NewBinaryReader(bytes.NewReader(bad), "bad.bin")
	_, err := drain(r)
	want := "bad.bin: record 1 at byte " + strconv.Itoa(blk) + ": block: checksum mismatch"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrChecksum) {
		t.Fatalf("got %v, want prefix %q", err, want)
	}
}

// TestBinaryHugeClaim: a block claiming 2^32−1 tokens over a few bytes of
// input is an error, found without allocating for the claim.
func TestBinaryHugeClaim(t *testing.T) {
	h := Header{Version: Version, IDSpace: Logical, Experts: 8, TopK: 1, Layers: 1}
	data := encode(t, FormatBinary, h, nil)
	data = data[:len(data)-endBlockSize]
	blk := []byte{tagRecord}
	blk = binary.LittleEndian.AppendUint32(blk, 0)
	blk = binary.LittleEndian.AppendUint32(blk, 0)
	blk = binary.LittleEndian.AppendUint32(blk, 0)
	blk = binary.LittleEndian.AppendUint32(blk, MaxSelections) // 1 GiB of ids claimed
	blk = binary.LittleEndian.AppendUint16(blk, 1)
	blk = binary.LittleEndian.AppendUint16(blk, 0)
	blk = append(blk, 1, 2, 3, 4)
	data = append(data, blk...)
	// Not parallel, so the allocation count is this test's alone.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := NewBinaryReader(bytes.NewReader(data), "huge.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("got %v", err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 8<<20 {
		t.Fatalf("allocated %d bytes for a lying block", n)
	}
}

func TestBinaryMalformed(t *testing.T) {
	t.Parallel()
	h := Header{Version: Version, IDSpace: Logical, Experts: 8, TopK: 2, Layers: 2, Steps: 1}
	good := encode(t, FormatBinary, h, []Record{{Layer: 1, Rank: -1, TopkIdx: []int32{1, 2}}})
	hdrEnd := len(good) - endBlockSize - (recordHeadSize + 8 + 4)
	withBlock := func(step, layer uint32, k uint16, ids ...int32) []byte {
		b := []byte{tagRecord}
		b = binary.LittleEndian.AppendUint32(b, step)
		b = binary.LittleEndian.AppendUint32(b, layer)
		b = binary.LittleEndian.AppendUint32(b, math.MaxUint32) // rank −1
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ids))/uint32(max(k, 1)))
		b = binary.LittleEndian.AppendUint16(b, k)
		b = binary.LittleEndian.AppendUint16(b, 0)
		for _, e := range ids {
			b = binary.LittleEndian.AppendUint32(b, uint32(e))
		}
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
		out := append(bytes.Clone(good[:hdrEnd]), b...)
		end := []byte{tagEnd}
		end = binary.LittleEndian.AppendUint64(end, 1)
		return append(out, binary.LittleEndian.AppendUint32(end, crc32.ChecksumIEEE(end))...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not a trace", []byte("hello world, this is text"), `f.bin: not a moebench binary trace`},
		{"id out of range", withBlock(0, 0, 2, 1, 8), "f.bin: record 0 at byte " + strconv.Itoa(hdrEnd) + ": topk_idx[0,1] = 8 is out of range [-1, 8)"},
		{"layer out of range", withBlock(0, 2, 2, 1, 2), "layer = 2 is out of range [0, 2)"},
		{"step out of range", withBlock(1, 0, 2, 1, 2), "step = 1 is out of range [0, 1)"},
		{"k differs from header", withBlock(0, 0, 3, 1, 2, 3), "k = 3, header top_k is 2"},
		{"trailing data", append(bytes.Clone(good), 0), "trailing data after the end block"},
		{"end count wrong", append(bytes.Clone(good[:len(good)-endBlockSize]), func() []byte {
			e := binary.LittleEndian.AppendUint64([]byte{tagEnd}, 5)
			return binary.LittleEndian.AppendUint32(e, crc32.ChecksumIEEE(e))
		}()...), "end block counts 5 records, file holds 1"},
		{"unknown tag", append(bytes.Clone(good[:hdrEnd]), 'X'), "unknown block tag 0x58"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewBinaryReader(bytes.NewReader(tc.data), "f.bin")
			if err == nil {
				_, err = drain(r)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWriterRejectsInvalid(t *testing.T) {
	t.Parallel()
	h := Header{Version: Version, IDSpace: Logical, Experts: 8, TopK: 2, Layers: 1}
	for _, f := range []Format{FormatBinary, FormatJSONL} {
		w, err := NewWriter(io.Discard, f, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []Record{
			{TopkIdx: []int32{1}},
			{TopkIdx: []int32{1, 9}},
			{TopkIdx: []int32{1, 2}, TopkWeights: []float32{float32(math.NaN()), 1}},
			{TopkIdx: []int32{1, 2}, TopkWeights: []float32{1}},
			{Rank: -2, TopkIdx: []int32{1, 2}},
			{TopkIdx: []int32{1, 2, 3, 3}}, // token 1 picks expert 3 twice
		} {
			if err := w.Write(r); err == nil {
				t.Errorf("%s: %+v accepted", f, r)
			}
		}
	}
	if _, err := NewWriter(io.Discard, FormatBinary, Header{IDSpace: "virtual", Experts: 1, TopK: 1, Layers: 1}); err == nil {
		t.Error("bad id space accepted")
	}
	if _, err := NewWriter(io.Discard, FormatBinary, Header{Version: Version, IDSpace: Logical, Experts: 8, TopK: 1, Layers: 1, EPSize: 12, GPUsPerNode: 8}); err == nil {
		t.Error("ep_size 12 on nodes of 8 accepted")
	}
	// -1 (no selection) may repeat; a wide top-k is checked too.
	wide := Header{Version: Version, IDSpace: Logical, Experts: 200, TopK: 100, Layers: 1}
	w, _ := NewWriter(io.Discard, FormatJSONL, wide)
	row := make([]int32, 100)
	for i := range row {
		row[i] = int32(i)
	}
	row[98], row[99] = -1, -1
	if err := w.Write(Record{TopkIdx: row}); err != nil {
		t.Errorf("repeated -1: %v", err)
	}
	row[99] = 5
	if err := w.Write(Record{TopkIdx: row}); err == nil || !strings.Contains(err.Error(), "slot 5") {
		t.Errorf("top-100 duplicate: %v", err)
	}
}
