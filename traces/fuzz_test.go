package traces

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkRoundTrip re-encodes what a reader accepted, in both native forms,
// and requires the same header and records back.
func checkRoundTrip(t *testing.T, h Header, recs []Record) {
	t.Helper()
	for _, f := range []Format{FormatBinary, FormatJSONL} {
		data := encode(t, f, h, recs)
		r, err := NewReader(bytes.NewReader(data), "again")
		if err != nil {
			t.Fatalf("%s: re-reading: %v", f, err)
		}
		if got := r.Header(); !reflect.DeepEqual(got, h) {
			t.Fatalf("%s: header changed:\n got %+v\nwant %+v", f, got, h)
		}
		back, err := drain(r)
		if err != nil {
			t.Fatalf("%s: re-reading: %v", f, err)
		}
		sameRecords(t, back, recs)
	}
}

func FuzzReadBinary(f *testing.F) {
	h, recs := genRecords(f, smallGen())
	f.Add(encode(f, FormatBinary, h, recs))
	f.Add(encode(f, FormatBinary, Header{Version: Version, IDSpace: Physical, Experts: 2, PhysicalExperts: 3, TopK: 1, Layers: 1,
		PhysicalToLogical: [][]int32{{0, 1, 1}}}, []Record{{Rank: -1, TopkIdx: []int32{2, -1}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewBinaryReader(bytes.NewReader(data), "f")
		if err != nil {
			return
		}
		recs, err := drain(r)
		if err != nil {
			return
		}
		checkRoundTrip(t, r.Header(), recs)
	})
}

func FuzzReadJSONL(f *testing.F) {
	h, recs := genRecords(f, smallGen())
	f.Add(encode(f, FormatJSONL, h, recs))
	f.Add([]byte(`{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1}` + "\n" +
		`{"step":0,"layer":0,"rank":-1,"topk_idx":[[1,-1]],"topk_weights":[[-0,1e-45]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewJSONLReader(bytes.NewReader(data), "f")
		if err != nil {
			return
		}
		recs, err := drain(r)
		if err != nil {
			return
		}
		checkRoundTrip(t, r.Header(), recs)
	})
}

func FuzzReadNPY(f *testing.F) {
	f.Add(npyBytes("<i4", []int{2, 3, 2}, i32s(make([]int32, 12))))
	f.Add(npyBytes("<f2", []int{3}, []byte{0, 0x3c, 1, 0, 0, 0x7c}))
	f.Add(npyBytes("|u1", []int{}, []byte{7}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := readNPY(bytes.NewReader(data), int64(len(data)), 1<<20, "f.npy", "a")
		if err != nil {
			return
		}
		again := npyBytes(a.descr, a.shape, a.data)
		b, err := readNPY(bytes.NewReader(again), int64(len(again)), 0, "f.npy", "a")
		if err != nil {
			t.Fatalf("re-reading: %v", err)
		}
		if b.descr != a.descr || !slices.Equal(b.shape, a.shape) || !bytes.Equal(b.data, a.data) {
			t.Fatalf("round trip changed the array: %+v vs %+v", a, b)
		}
		for i := range a.len() { // every element decodes without panicking
			a.int(i)
			a.float(i)
		}
	})
}

func FuzzReadNPZ(f *testing.F) {
	ids := npyBytes("<i4", []int{2, 3, 2}, i32s([]int32{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3}))
	f.Add(npzBytes(f, false, member{"topk_ids", ids}), uint8(1))
	f.Add(npzBytes(f, true, member{"routed_experts", ids},
		member{"topk_weights", npyBytes("<f4", []int{2, 3, 2}, f32s(make([]float32, 12)))}), uint8(0))
	f.Add(npzBytes(f, false, member{"logical_count", npyBytes("<i8", []int{1, 2, 2}, i64s([]int64{1, 2, 3, 4}))}), uint8(0))
	f.Add(npzBytes(f, false, member{"topk_ids", ids},
		member{"physical_to_logical_map", npyBytes("<i4", []int{2, 8}, i32s(make([]int32, 16)))},
		member{"segment_offsets", npyBytes("<i8", []int{3}, i64s([]int64{0, 1, 3}))}), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, layout uint8) {
		z, err := openNPZ(bytes.NewReader(data), int64(len(data)), "f.npz")
		if err != nil {
			return
		}
		// Counts are rescaled to a few tokens so the synthesized records stay
		// small whatever the counts claim.
		opt := ImportOptions{TopK: 2, Tokens: 16, Layout: []Layout{LayoutAuto, LayersFirst, TokensFirst}[layout%3]}
		r, err := importNPZ(z, opt, false)
		if err != nil {
			return
		}
		recs, err := drain(r)
		if err != nil {
			t.Fatalf("accepted arrays then failed: %v", err)
		}
		checkRoundTrip(t, r.Header(), recs)
	})
}

func FuzzReadCountsCSV(f *testing.F) {
	f.Add([]byte("layer_id,expert_id,count\n0,0,6\n0,3,2\n1,1,4\n"))
	f.Add([]byte("# comment\n 3 , 7 , 0 \n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rc, err := parseCountsCSV(bytes.NewReader(data), "f.csv")
		if err != nil {
			return
		}
		keys := slices.SortedFunc(maps.Keys(rc.counts), func(a, b [2]int32) int {
			if a[0] != b[0] {
				return int(a[0] - b[0])
			}
			return int(a[1] - b[1])
		})
		var b strings.Builder
		b.WriteString("layer_id,expert_id,count\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "%d,%d,%d\n", k[0], k[1], rc.counts[k])
		}
		again, err := parseCountsCSV(strings.NewReader(b.String()), "again.csv")
		if err != nil {
			t.Fatalf("re-reading: %v", err)
		}
		if !maps.Equal(again.counts, rc.counts) || again.layers != rc.layers || again.experts != rc.experts {
			t.Fatal("round trip changed the counts")
		}
	})
}
