package traces

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// idsLF returns layers-first ids [L, T, k] with a recognisable pattern.
func idsLF(L, T, k, experts int) []int32 {
	out := make([]int32, L*T*k)
	for i := range out {
		out[i] = int32((i*7 + i/k) % experts)
	}
	return out
}

// toTokensFirst transposes [L, T, k] to [T, L, k].
func toTokensFirst(ids []int32, L, T, k int) []int32 {
	out := make([]int32, len(ids))
	for l := range L {
		for t := range T {
			copy(out[(t*L+l)*k:(t*L+l+1)*k], ids[(l*T+t)*k:(l*T+t+1)*k])
		}
	}
	return out
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportIDs(t *testing.T) {
	t.Parallel()
	const L, T, k, E = 3, 5, 2, 16
	lf := idsLF(L, T, k, E)
	tf := toTokensFirst(lf, L, T, k)
	i64 := make([]int64, len(tf))
	for i, v := range tf {
		i64[i] = int64(v)
	}
	w := make([]float32, len(lf))
	for i := range w {
		w[i] = float32(i) / 7
	}
	var wtf []float32
	for _, v := range toTokensFirst(func() []int32 {
		o := make([]int32, len(w))
		for i := range w {
			o[i] = int32(i)
		}
		return o
	}(), L, T, k) {
		wtf = append(wtf, w[v])
	}
	want := make([]Record, L)
	for l := range L {
		want[l] = Record{Layer: l, Rank: -1, TopkIdx: lf[l*T*k : (l+1)*T*k]}
	}
	withW := make([]Record, L)
	for l := range L {
		withW[l] = want[l]
		withW[l].TopkWeights = w[l*T*k : (l+1)*T*k]
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file []byte
		ext  string
		opt  ImportOptions
		want []Record
	}{
		{"npy layers-first", npyBytes("<i4", []int{L, T, k}, i32s(lf)), ".npy", ImportOptions{Layout: LayersFirst, Experts: E}, want},
		{"npy tokens-first i8", npyBytes("<i8", []int{T, L, k}, i64s(i64)), ".npy", ImportOptions{Layout: TokensFirst, Experts: E}, want},
		{"npz routed_experts deflated", npzBytes(t, true, member{"routed_experts", npyBytes("<i8", []int{T, L, k}, i64s(i64))}), ".npz", ImportOptions{Experts: E}, want},
		{"npz routing_indices", npzBytes(t, false, member{"routing_indices", npyBytes("<i4", []int{T, L, k}, i32s(tf))}), ".npz", ImportOptions{Experts: E}, want},
		{"npz topk_ids with weights", npzBytes(t, false,
			member{"topk_ids", npyBytes("<i4", []int{T, L, k}, i32s(tf))},
			member{"topk_weights", npyBytes("<f4", []int{T, L, k}, f32s(wtf))}), ".npz", ImportOptions{Layout: TokensFirst, Experts: E}, withW},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "_")+tc.ext, tc.file)
			r, err := Import([]string{p}, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			h := r.Header()
			if h.TopK != k || h.Layers != L || h.Experts != E || h.IDSpace != Logical || h.Synthesized {
				t.Fatalf("header %+v", h)
			}
			sameRecords(t, readAll(t, r), tc.want)
		})
	}
}

func TestImportPhysicalSegments(t *testing.T) {
	t.Parallel()
	const L, T, k, P = 2, 4, 2, 6
	ids := idsLF(L, T, k, P)
	p2l := []int32{0, 1, 2, 3, 0, 1, 3, 2, 1, 0, 2, 3}
	data := npzBytes(t, false,
		member{"topk_ids", npyBytes("<i4", []int{L, T, k}, i32s(ids))},
		member{"physical_to_logical_map", npyBytes("<i4", []int{L, P}, i32s(p2l))},
		member{"segment_offsets", npyBytes("<i8", []int{3}, i64s([]int64{0, 1, 4}))},
		member{"segment_steps", npyBytes("<i8", []int{2}, i64s([]int64{3, 4}))},
		member{"segment_ranks", npyBytes("<i8", []int{2}, i64s([]int64{0, 1}))},
	)
	p := writeFile(t, t.TempDir(), "sglang.npz", data)
	r, err := Import([]string{p}, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if h.IDSpace != Physical || h.PhysicalExperts != P || h.Experts != 4 || h.Steps != 5 || h.PhysicalToLogical[1][0] != 3 {
		t.Fatalf("header %+v", h)
	}
	got := readAll(t, r)
	want := []Record{
		{Step: 3, Layer: 0, Rank: 0, TopkIdx: ids[0:2]},
		{Step: 3, Layer: 1, Rank: 0, TopkIdx: ids[8:10]},
		{Step: 4, Layer: 0, Rank: 1, TopkIdx: ids[2:8]},
		{Step: 4, Layer: 1, Rank: 1, TopkIdx: ids[10:16]},
	}
	sameRecords(t, got, want)
}

// TestImportMalformed: every bad input fails naming the file and the
// element, line or field, and Convert leaves nothing behind.
func TestImportMalformed(t *testing.T) {
	t.Parallel()
	ids := idsLF(4, 20, 3, 256)
	ids[(3*20+17)*3+2] = 300
	good := npyBytes("<i4", []int{2, 3, 2}, i32s([]int32{0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3}))
	fortran := bytes.Replace(good, []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1)
	for _, tc := range []struct {
		name  string
		file  string
		data  []byte
		opt   ImportOptions
		files []string // extra CSV files (name=content) for multi-rank input
		want  string
	}{
		{name: "id out of range", file: "trace.npz", data: npzBytes(t, false, member{"topk_ids", npyBytes("<i4", []int{4, 20, 3}, i32s(ids))}),
			opt: ImportOptions{Layout: LayersFirst, Experts: 256}, want: "trace.npz: topk_ids[3,17,2] = 300 is out of range [-1, 256)"},
		{name: "ambiguous layout", file: "t.npz", data: npzBytes(t, false, member{"topk_ids", good}),
			want: "layout: " + "t.npz: topk_ids has shape [2 3 2]: cannot tell the layer axis; give layers-first or tokens-first"},
		{name: "wrong rank", file: "t.npy", data: npyBytes("<i4", []int{12}, i32s(make([]int32, 12))),
			opt: ImportOptions{Layout: LayersFirst}, want: "t.npy: topk_ids has shape [12], want [layers, tokens, k]"},
		{name: "float ids", file: "t.npy", data: npyBytes("<f4", []int{2, 3, 2}, f32s(make([]float32, 12))),
			opt: ImportOptions{Layout: LayersFirst}, want: `t.npy: topk_ids has dtype "<f4", want an integer dtype`},
		{name: "big-endian", file: "t.npy", data: npyBytes(">i4", []int{2, 3, 2}, i32s(make([]int32, 12))),
			opt: ImportOptions{Layout: LayersFirst}, want: `t.npy: topk_ids: .npy header: dtype ">i4" is not supported`},
		{name: "fortran order", file: "t.npy", data: fortran, opt: ImportOptions{Layout: LayersFirst},
			want: "t.npy: topk_ids: .npy header: fortran_order is True"},
		{name: "truncated npy", file: "t.npy", data: good[:len(good)-5], opt: ImportOptions{Layout: LayersFirst},
			want: "t.npy: topk_ids: shape [2 3 2] needs 48 data bytes, the file holds 43"},
		{name: "over the memory budget", file: "t.npz", data: npzBytes(t, true, member{"topk_ids", good}),
			opt: ImportOptions{Layout: LayersFirst, MaxBytes: 47}, want: "t.npz: topk_ids: shape [2 3 2] declares 48 data bytes, more than the memory budget of 47"},
		{name: "truncated npz", file: "t.npz", data: npzBytes(t, true, member{"topk_ids", good})[:60],
			want: "t.npz: not a readable .npz (zip) archive"},
		{name: "top-k mismatch", file: "t.npz", data: npzBytes(t, false, member{"topk_ids", good},
			member{"topk_weights", npyBytes("<f4", []int{2, 3, 3}, f32s(make([]float32, 18)))}),
			opt: ImportOptions{Layout: LayersFirst}, want: "t.npz: topk_weights has shape [2 3 3], topk_ids has [2 3 2]"},
		{name: "no known array", file: "t.npz", data: npzBytes(t, false, member{"input_ids", good}),
			want: "t.npz: no array named topk_ids, routed_experts, routing_indices, logical_count or weight (found: input_ids)"},
		{name: "map layers mismatch", file: "t.npz", data: npzBytes(t, false, member{"topk_ids", good},
			member{"physical_to_logical_map", npyBytes("<i4", []int{3, 8}, i32s(make([]int32, 24)))}),
			opt: ImportOptions{Layout: LayersFirst}, want: "t.npz: physical_to_logical_map has shape [3 8], want [2, physical experts]"},
		{name: "csv bad expert", file: "counts.csv",
			data: []byte("layer_id,expert_id,count\n" + strings.Repeat("0,1,5\n", 0) + "0,0,1\n0,1,1\n0,2,1\n0,3,1\n0,4,1\n0,5,1\n0,6,1\n0,7,1\n0,8,1\n0,9,1\n1,x,3\n"),
			opt:  ImportOptions{From: FormatSGLangStatCSV, TopK: 2}, want: `counts.csv:12: expert_id "x" is not an integer`},
		{name: "csv fields", file: "c.csv", data: []byte("0,1\n"), opt: ImportOptions{From: FormatSGLangStatCSV, TopK: 2},
			want: "c.csv:1: 2 fields, want 3 (layer_id,expert_id,count)"},
		{name: "csv duplicate", file: "c.csv", data: []byte("0,1,2\n0,1,3\n"), opt: ImportOptions{From: FormatSGLangStatCSV, TopK: 2},
			want: "c.csv:2: layer 0, expert 1 already counted on line 1"},
		{name: "csv negative", file: "c.csv", data: []byte("0,1,-2\n"), opt: ImportOptions{From: FormatSGLangStatCSV, TopK: 2},
			want: "c.csv:1: count -2 is out of range"},
		{name: "csv needs topk", file: "c.csv", data: []byte("0,1,2\n"), opt: ImportOptions{From: FormatSGLangStatCSV},
			want: "topk: " + "c.csv: SGLang stat CSV carries no top-k; give it"},
		{name: "eplb csv ragged", file: "w.csv", data: []byte("1,2,3\n4,5\n"), opt: ImportOptions{From: FormatEPLB, TopK: 2},
			want: "w.csv:2: 2 columns, the first row has 3"},
		{name: "eplb csv not a number", file: "w.csv", data: []byte("1,2,3\n4,abc,6\n"), opt: ImportOptions{From: FormatEPLB, TopK: 2},
			want: `w.csv:2: column 2: "abc" is not a non-negative number`},
		{name: "stat negative count", file: "s.npz", data: npzBytes(t, false, member{"logical_count", npyBytes("<i8", []int{1, 2, 2}, i64s([]int64{1, 2, -3, 4}))}),
			opt: ImportOptions{TopK: 1}, want: "s.npz: logical_count[0,1,0] = -3 is not a non-negative count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := writeFile(t, dir, tc.file, tc.data)
			tc.want = strings.ReplaceAll(tc.want, tc.file, p)
			r, err := Import([]string{p}, tc.opt)
			if err == nil {
				_, err = drain(r)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got  %v\nwant %q", err, tc.want)
			}
		})
	}
}

// TestSynthesizedCountsExact: tokens made up from counts reproduce the
// counts exactly, pick distinct experts per token, and depend only on seed.
func TestSynthesizedCountsExact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		counts []int64
		k      int
		tokens int // want
	}{
		{"even", []int64{4, 4, 4, 4}, 2, 8},
		{"remainder pads -1", []int64{3, 2, 2}, 2, 4},
		{"one hot expert forces tokens", []int64{10, 1, 1}, 4, 10},
		{"empty", []int64{0, 0}, 2, 0},
		{"skewed", []int64{50, 30, 7, 7, 3, 1, 1, 1}, 3, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ids, err := Synthesize(tc.counts, tc.k, recordRNG(1, 0, 0, 0))
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != tc.tokens*tc.k {
				t.Fatalf("%d tokens, want %d", len(ids)/tc.k, tc.tokens)
			}
			got := make([]int64, len(tc.counts))
			for tok := range len(ids) / tc.k {
				row := ids[tok*tc.k : (tok+1)*tc.k]
				seen := map[int32]bool{}
				for _, e := range row {
					if e < 0 {
						continue
					}
					if seen[e] {
						t.Fatalf("token %d picks expert %d twice: %v", tok, e, row)
					}
					seen[e] = true
					got[e]++
				}
			}
			if !slices.Equal(got, tc.counts) {
				t.Fatalf("counts %v, want %v", got, tc.counts)
			}
			again, _ := Synthesize(tc.counts, tc.k, recordRNG(1, 0, 0, 0))
			if !slices.Equal(again, ids) {
				t.Fatal("not deterministic")
			}
		})
	}
}

func TestImportCounts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r0 := writeFile(t, dir, "rank0.csv", []byte("layer_id,expert_id,count\n0,0,6\n0,3,2\n1,1,4\n"))
	r1 := writeFile(t, dir, "rank1.csv", []byte("0,2,3\n1,3,1\n"))
	r, err := Import([]string{r0, r1}, ImportOptions{From: FormatSGLangStatCSV, TopK: 2, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if !h.Synthesized || h.EPSize != 2 || h.Experts != 4 || h.Layers != 2 || !strings.Contains(h.Provenance, "synthesized from rank0.csv") {
		t.Fatalf("header %+v", h)
	}
	s, err := Inspect(r)
	if err != nil {
		t.Fatal(err)
	}
	if s.Selections != 16 || s.Ranks != 2 || s.Records != 4 {
		t.Fatalf("summary %+v", s)
	}

	w := writeFile(t, dir, "w.csv", []byte("# layer 0 then 1\n1.5,0.5,0,2\n1,1,1,1\n"))
	r, err = Import([]string{w}, ImportOptions{From: FormatEPLB, TopK: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err = Inspect(r)
	if err != nil {
		t.Fatal(err)
	}
	// Not integral: rescaled to DefaultTokens tokens per layer, shares kept.
	if s.Layers[0].Selections != 2*DefaultTokens || s.Layers[0].Top1Share != 0.5 || s.Layers[1].Imbalance != 1 {
		t.Fatalf("layers %+v", s.Layers)
	}

	st := writeFile(t, dir, "stat.npz", npzBytes(t, false, member{"logical_count", npyBytes("<i8", []int{2, 1, 3}, i64s([]int64{1, 2, 3, 0, 0, 4}))}))
	r, err = Import([]string{st}, ImportOptions{TopK: 2})
	if err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, r)
	if len(recs) != 2 || recs[1].Step != 1 || len(recs[1].TopkIdx) != 8 {
		t.Fatalf("records %+v", recs)
	}
}

func TestJSONLMalformed(t *testing.T) {
	t.Parallel()
	hdr := `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1}` + "\n"
	for _, tc := range []struct{ name, data, want string }{
		{"empty", "", "t.jsonl: empty file"},
		{"unknown header field", `{"format":"moebench-trace","colour":1}` + "\n", `t.jsonl:1: header: unknown field "colour"`},
		{"wrong format tag", `{"format":"x","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1}`, `t.jsonl:1: header: format = "x"`},
		{"bad version", strings.Replace(hdr, `"version":1`, `"version":9`, 1), "t.jsonl:1: header: version 9 is not supported"},
		{"id out of range", hdr + `{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2],[3,8]]}`, "t.jsonl:2: topk_idx[1,1] = 8 is out of range [-1, 8)"},
		{"short row", hdr + "\n" + `{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2],[3]]}`, "t.jsonl:3: token 1 has 1 entries, header top_k is 2"},
		{"missing rank", hdr + `{"step":0,"layer":0,"topk_idx":[]}`, `t.jsonl:2: missing field "rank"`},
		{"missing ids", hdr + `{"step":0,"layer":0,"rank":0}`, `t.jsonl:2: missing field "topk_idx"`},
		{"fraction id", hdr + `{"step":0,"layer":0,"rank":0,"topk_idx":[[1.5,2]]}`, "t.jsonl:2: topk_idx[0,0] = 1.5 is not a 32-bit integer"},
		{"weights mismatch", hdr + `{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2]],"topk_weights":[]}`, "t.jsonl:2: topk_weights has 0 entries, topk_idx has 2"},
		{"truncated line", hdr + `{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2`, "t.jsonl:2: the JSON ends early (cut short?)"},
		{"unknown field", hdr + `{"step":0,"layer":0,"rank":0,"topk_idx":[],"extra":1}`, `t.jsonl:2: unknown field "extra"`},
		{"field of the wrong kind", hdr + `{"step":"0","layer":0,"rank":0,"topk_idx":[]}`, "t.jsonl:2: field step: want a whole number, not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := NewJSONLReader(strings.NewReader(tc.data), "t.jsonl")
			if err == nil {
				_, err = drain(r)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got  %v\nwant %q", err, tc.want)
			}
		})
	}
}
