package traces_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"

	"moebench/traces"

	"moebench/routing"
)

// A synthetic trace written in the binary form and read back.
func ExampleGenerate() {
	o := traces.DefaultGenOptions()
	o.Routing, _ = routing.Parse("hot:4:0.5")
	o.Experts, o.TopK, o.Layers, o.Ranks, o.TokensPerRank = 16, 2, 2, 2, 3
	src, _ := traces.Generate(o)

	var buf bytes.Buffer
	w, _ := traces.NewWriter(&buf, traces.FormatBinary, src.Header())
	n, _ := traces.Copy(w, src)
	w.Close()

	r, _ := traces.NewReader(&buf, "mem")
	h := r.Header()
	fmt.Println(n, "records;", h.Layers, "layers,", h.TopK, "experts per token")
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		fmt.Printf("step %d layer %d rank %d: %d tokens\n", rec.Step, rec.Layer, rec.Rank, rec.Tokens(h.TopK))
	}
	// Output:
	// 4 records; 2 layers, 2 experts per token
	// step 0 layer 0 rank 0: 3 tokens
	// step 0 layer 0 rank 1: 3 tokens
	// step 0 layer 1 rank 0: 3 tokens
	// step 0 layer 1 rank 1: 3 tokens
}

// Per-expert counts carry no token identity: Synthesize makes up tokens
// that reproduce them exactly.
func ExampleSynthesize() {
	counts := []int64{5, 2, 1}
	ids, _ := traces.Synthesize(counts, 2, rand.New(rand.NewPCG(1, 2)))
	got := make([]int64, len(counts))
	for _, e := range ids {
		if e >= 0 {
			got[e]++
		}
	}
	fmt.Println(len(ids)/2, "tokens, counts", got)
	// Output: 5 tokens, counts [5 2 1]
}

// The JSON-lines form, one record per line.
func ExampleNewJSONLWriter() {
	h := traces.Header{Version: traces.Version, IDSpace: traces.Logical, Experts: 8, TopK: 2, Layers: 1}
	w, _ := traces.NewJSONLWriter(os.Stdout, h)
	w.Write(traces.Record{Rank: 3, TopkIdx: []int32{1, 5, 0, -1}, TopkWeights: []float32{0.75, 0.25, 1, 0}})
	w.Close()
	// Output:
	// {"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1}
	// {"step":0,"layer":0,"rank":3,"topk_idx":[[1,5],[0,-1]],"topk_weights":[[0.75,0.25],[1,0]]}
}
