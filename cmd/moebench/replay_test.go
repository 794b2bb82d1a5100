package main

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"moebench/moe"
	"moebench/replay"
	"moebench/sweep"
)

// replayShape is the skew test's shape: 16 ranks over two nodes, 64
// experts, 32 tokens per rank, top-8.
var replayShape = []string{"--ranks", "16", "--gpus-per-node", "8", "--experts", "64", "--tokens", "32"}

// genTrace writes a synthetic trace with trace gen and returns its path.
func genTrace(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	var out, errb bytes.Buffer
	if err := runTrace(append([]string{"gen", "--out", path}, args...), &out, &errb); err != nil {
		t.Fatalf("trace gen %v: %v", args, err)
	}
	return path
}

func replayCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := runReplay(args, &out, &errb)
	return out.String(), err
}

// replayDoc is the part of replay's JSON the tests read.
type replayDoc struct {
	Header struct {
		Figures string   `json:"figures"`
		Notes   []string `json:"notes"`
	} `json:"header"`
	Layers []struct {
		Step      int                        `json:"step"`
		Layer     int                        `json:"layer"`
		Transport string                     `json:"transport"`
		Preset    string                     `json:"preset"`
		Tokens    int                        `json:"tokens"`
		Dispatch  map[string]json.RawMessage `json:"dispatch"`
		Combine   map[string]json.RawMessage `json:"combine"`
		Slowest   struct {
			Dispatch struct {
				Rank      int                `json:"rank"`
				TimeUs    float64            `json:"time_us"`
				Breakdown map[string]float64 `json:"breakdown"`
			} `json:"dispatch"`
		} `json:"slowest_rank"`
		RouteHash string `json:"route_hash"`
		Correct   bool   `json:"correct"`
	} `json:"layers"`
	Aggregate struct {
		Layers     int `json:"layers"`
		Transports []struct {
			Preset   string `json:"preset"`
			Dispatch struct {
				LayerUs      map[string]float64 `json:"layer_time_us"`
				SlowestRanks []replay.RankCount `json:"slowest_ranks"`
			} `json:"dispatch"`
		} `json:"transports"`
		Load struct {
			PerRank struct {
				Total struct {
					ArgMax    int     `json:"argmax"`
					Imbalance float64 `json:"imbalance"`
				} `json:"total"`
			} `json:"per_rank"`
		} `json:"load"`
	} `json:"aggregate"`
}

func decodeReplay(t *testing.T, out string) replayDoc {
	t.Helper()
	var d replayDoc
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("replay JSON: %v\n%s", err, out)
	}
	return d
}

func TestReplayRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := genTrace(t, dir, "r.bin", "--routing", "powerlaw:1.1", "--ranks", "8", "--gpus-per-node", "4", "--experts", "32", "--tokens", "16", "--layers", "2", "--steps", "2", "--weights")
	jsonl := filepath.Join(dir, "r.jsonl")
	if err := runTrace([]string{"convert", bin, "--out", jsonl}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	args := []string{"--hidden", "1024", "--format", "json"}
	a, err := replayCLI(t, append([]string{"--trace", bin}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := replayCLI(t, append([]string{"--trace", bin}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("the same trace replayed twice gives different JSON")
	}
	d := decodeReplay(t, a)
	if !strings.HasPrefix(d.Header.Figures, "modelled") {
		t.Errorf("figures %q, want modelled", d.Header.Figures)
	}
	if n := len(d.Layers); n != 2*2*3 || d.Aggregate.Layers != 4 || len(d.Aggregate.Transports) != 3 {
		t.Fatalf("%d layer entries over %d groups and %d transports, want 12 over 4 and 3", n, d.Aggregate.Layers, len(d.Aggregate.Transports))
	}
	// Records are step, layer, rank ordered, and so are the groups.
	for i, l := range d.Layers {
		if g := i / 3; l.Step != g/2 || l.Layer != g%2 || !l.Correct || l.Tokens != 16 {
			t.Errorf("entry %d: step %d layer %d tokens %d correct %v", i, l.Step, l.Layer, l.Tokens, l.Correct)
		}
		// dispatch and combine carry run's keys.
		for _, ph := range []map[string]json.RawMessage{l.Dispatch, l.Combine} {
			for _, k := range []string{"mean_us", "min_us", "max_us", "p50_us", "p99_us", "issue_done_us", "algo_gbps", "breakdown", "bound_by"} {
				if _, ok := ph[k]; !ok {
					t.Errorf("entry %d lacks %q", i, k)
				}
			}
		}
	}
	// JSON lines carry the same records: the same routing, the same times.
	c, err := replayCLI(t, append([]string{"--trace", jsonl}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	dc := decodeReplay(t, c)
	for i := range d.Layers {
		x, y := d.Layers[i], dc.Layers[i]
		if x.RouteHash != y.RouteHash || string(x.Dispatch["mean_us"]) != string(y.Dispatch["mean_us"]) {
			t.Errorf("entry %d: bin and jsonl differ: %s %s vs %s %s", i, x.RouteHash, x.Dispatch["mean_us"], y.RouteHash, y.Dispatch["mean_us"])
		}
	}
}

func TestReplaySkewSlowsTheHotRank(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(routing string) replayDoc {
		tr := genTrace(t, dir, strings.ReplaceAll(routing, ":", "")+".bin", append([]string{"--routing", routing, "--layers", "2"}, replayShape...)...)
		out, err := replayCLI(t, "--trace", tr, "--transport", "mini-gda", "--format", "json")
		if err != nil {
			t.Fatal(err)
		}
		return decodeReplay(t, out)
	}
	skew, uni := run("powerlaw:1.2"), run("uniform")
	hot := skew.Aggregate.Load.PerRank.Total.ArgMax
	if hot != 0 || skew.Aggregate.Load.PerRank.Total.Imbalance < 2*uni.Aggregate.Load.PerRank.Total.Imbalance {
		t.Fatalf("power law: hottest rank %d, imbalance %.3g (uniform %.3g); want rank 0 (hottest experts lowest ids) and a clear skew",
			hot, skew.Aggregate.Load.PerRank.Total.Imbalance, uni.Aggregate.Load.PerRank.Total.Imbalance)
	}
	if sr := skew.Aggregate.Transports[0].Dispatch.SlowestRanks; len(sr) == 0 || sr[0].Rank != hot || sr[0].Layers != 2 {
		t.Errorf("slowest dispatch ranks %v, want the hot rank %d in both layers", sr, hot)
	}
	// Receiving: the wire into the hot rank and its copy into the packed
	// layout. Their share of its critical path grows, and so does its time.
	// Its last copy need not: with a token's unpack near its floor, the
	// hot rank's copies overlap its inbound wire but for the last block's.
	recv := func(b map[string]float64) float64 { return b["wire"] + b["copy"] }
	for i := range skew.Layers {
		s, u := skew.Layers[i].Slowest.Dispatch, uni.Layers[i].Slowest.Dispatch
		if s.Rank != hot {
			t.Errorf("layer %d: slowest rank %d, want the hot rank %d", i, s.Rank, hot)
		}
		if s.TimeUs <= u.TimeUs {
			t.Errorf("layer %d: hot rank's dispatch %.3g µs is not above the uniform case's slowest %.3g µs", i, s.TimeUs, u.TimeUs)
		}
		if rs, ru := recv(s.Breakdown)/s.TimeUs, recv(u.Breakdown)/u.TimeUs; rs <= ru || s.Breakdown["copy"] < u.Breakdown["copy"] {
			t.Errorf("layer %d: receive share (wire + copy) %.3g vs uniform %.3g, copy %.3g vs %.3g µs: want the share to grow under skew, the copy not to shrink",
				i, rs, ru, s.Breakdown["copy"], u.Breakdown["copy"])
		}
	}
	if s, u := skew.Aggregate.Transports[0].Dispatch.LayerUs["p99"], uni.Aggregate.Transports[0].Dispatch.LayerUs["p99"]; s <= u {
		t.Errorf("p99 layer dispatch %.3g µs under skew, %.3g uniform: want skew slower", s, u)
	}
}

// npyBytes is a minimal C-order little-endian .npy.
func npyBytes(descr string, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	return append(append(b, h...), data...)
}

func npzBytes(t *testing.T, members map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	for _, name := range []string{"topk_ids", "topk_weights", "physical_to_logical_map", "segment_offsets", "segment_steps", "segment_ranks"} {
		data, ok := members[name]
		if !ok {
			continue
		}
		w, err := z.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func i32bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func i64bytes(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// routedIDs fills [tokens, layers, k] with distinct experts per token.
func routedIDs(tokens, layers, k, experts int) []int32 {
	ids := make([]int32, 0, tokens*layers*k)
	for tok := range tokens {
		for l := range layers {
			for j := range k {
				ids = append(ids, int32((tok*7+l*3+j*5)%experts))
			}
		}
	}
	return ids
}

func TestReplayNPZToTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// vLLM-style routed_experts is tokens-first; here as topk_ids with
	// --layout, 48 tokens over 2 layers, top-2 of 16 experts, no ranks.
	ids := routedIDs(48, 2, 2, 16)
	path := filepath.Join(dir, "routing.npz")
	os.WriteFile(path, npzBytes(t, map[string][]byte{"topk_ids": npyBytes("<i4", []int{48, 2, 2}, i32bytes(ids))}), 0o644)
	out, err := replayCLI(t, "--trace", path, "--layout", "tokens-first", "--ranks", "4", "--gpus-per-node", "2", "--hidden", "1024")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# trace " + path + ": logical ids, 16 experts, top-2, 2 layers, steps 1, ranks not recorded",
		"converted from routing.npz (topk_ids, tokens-first)",
		"records without a rank are split evenly over the 4 ranks",
		"step  layer  tokens/rank  preset",
		"Over 2 (step, layer) groups",
		"Critical path by cause",
		"Selections by locality:",
		"96 tokens, 192 selections",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// One row per layer, preset and phase, 12 tokens on each rank.
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && (f[0] == "0") && (f[1] == "0" || f[1] == "1") {
			rows++
			if f[2] != "12" {
				t.Errorf("row %q: tokens/rank %s, want 48/4 = 12", l, f[2])
			}
		}
	}
	if rows != 2*3*2 {
		t.Errorf("%d per-layer rows, want 12:\n%s", rows, out)
	}
}

func TestReplaySegmentsAndCSV(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Two steps, two ranks each, of uneven size: the busiest rank sets
	// tokens per rank.
	ids := routedIDs(20, 1, 2, 8)
	path := filepath.Join(dir, "seg.npz")
	os.WriteFile(path, npzBytes(t, map[string][]byte{
		"topk_ids":        npyBytes("<i4", []int{20, 2}, i32bytes(ids)),
		"segment_offsets": npyBytes("<i8", []int{5}, i64bytes([]int64{0, 3, 8, 14, 20})),
		"segment_steps":   npyBytes("<i8", []int{4}, i64bytes([]int64{0, 0, 1, 1})),
		"segment_ranks":   npyBytes("<i8", []int{4}, i64bytes([]int64{0, 1, 1, 0})),
	}), 0o644)
	out, err := replayCLI(t, "--trace", path, "--ranks", "2", "--transport", "mini-gda", "--hidden", "512", "--format", "csv")
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "# ") {
			body = append(body, l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(strings.Join(body, "\n"))).ReadAll()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	col := map[string]int{}
	for i, c := range recs[0] {
		col[c] = i
	}
	if len(recs) != 1+2*2+2 {
		t.Fatalf("%d CSV records, want header + 4 layer rows + 2 aggregate rows:\n%s", len(recs), out)
	}
	for i, want := range []struct{ scope, step, tokens string }{{"layer", "0", "5"}, {"layer", "0", "5"}, {"layer", "1", "6"}, {"layer", "1", "6"}, {"aggregate", "", ""}, {"aggregate", "", ""}} {
		r := recs[i+1]
		if r[col["scope"]] != want.scope || r[col["step"]] != want.step || r[col["tokens"]] != want.tokens {
			t.Errorf("record %d: scope %s step %s tokens %s, want %+v", i+1, r[col["scope"]], r[col["step"]], r[col["tokens"]], want)
		}
	}
	if agg := recs[5]; agg[col["layers"]] != "2" || agg[col["over"]] != "layers" {
		t.Errorf("aggregate record %v: want 2 layers, over layers", agg)
	}
}

func TestReplayUnrankedSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ids := routedIDs(12, 2, 2, 8)
	write := func(name string, steps []int64) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, npzBytes(t, map[string][]byte{
			"topk_ids":        npyBytes("<i4", []int{12, 2, 2}, i32bytes(ids)),
			"segment_offsets": npyBytes("<i8", []int{4}, i64bytes([]int64{0, 4, 8, 12})),
			"segment_steps":   npyBytes("<i8", []int{3}, i64bytes(steps)),
		}), 0o644)
		return path
	}
	args := []string{"--layout", "tokens-first", "--ranks", "4", "--gpus-per-node", "2", "--transport", "mini-gda", "--hidden", "512", "--format", "json"}
	// Step 0 comes in two segments: each of its layers gathers both
	// (8 tokens, 2 per rank) before step 1 (4 tokens, 1 per rank).
	out, err := replayCLI(t, append([]string{"--trace", write("steps.npz", []int64{0, 0, 1})}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	d := decodeReplay(t, out)
	var got [][3]int
	for _, l := range d.Layers {
		got = append(got, [3]int{l.Step, l.Layer, l.Tokens})
	}
	if want := [][3]int{{0, 0, 2}, {0, 1, 2}, {1, 0, 1}, {1, 1, 1}}; !reflect.DeepEqual(got, want) {
		t.Errorf("(step, layer, tokens/rank) %v, want %v", got, want)
	}
	back := write("back.npz", []int64{1, 0, 0})
	if _, err := replayCLI(t, append([]string{"--trace", back}, args...)...); err == nil || !strings.Contains(err.Error(), "records without a rank must come step by step; step 0 follows step 1") {
		t.Errorf("steps going back: got %v", err)
	}
}

func TestReplayPhysicalIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 4 logical experts on 8 physical (EPLB-style): every id is a replica,
	// placed contiguously, two per rank.
	ids := routedIDs(8, 1, 2, 8)
	p2l := []int32{0, 1, 2, 3, 0, 1, 2, 3}
	path := filepath.Join(dir, "eplb.npz")
	os.WriteFile(path, npzBytes(t, map[string][]byte{
		"topk_ids":                npyBytes("<i4", []int{8, 2}, i32bytes(ids)),
		"physical_to_logical_map": npyBytes("<i4", []int{1, 8}, i32bytes(p2l)),
	}), 0o644)
	out, err := replayCLI(t, "--trace", path, "--ranks", "4", "--gpus-per-node", "2", "--transport", "mini-gda", "--hidden", "512", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	d := decodeReplay(t, out)
	if !strings.Contains(strings.Join(d.Header.Notes, "\n"), "physical ids, 8 physical experts serving 4 logical") {
		t.Errorf("notes do not name the physical id space: %q", d.Header.Notes)
	}
	if len(d.Layers) != 1 || !d.Layers[0].Correct || d.Layers[0].Tokens != 2 {
		t.Errorf("layers %+v, want one correct layer of 2 tokens per rank", d.Layers)
	}
	if !strings.Contains(out, `"experts": 8`) {
		t.Errorf("the layer does not run on the 8 physical experts:\n%s", out)
	}
}

func TestReplayCountsSaySynthesized(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "rank0.csv")
	os.WriteFile(csvPath, []byte("layer_id,expert_id,count\n0,0,6\n0,1,2\n0,2,4\n0,3,4\n"), 0o644)
	out, err := replayCLI(t, "--trace", csvPath, "--topk", "2", "--transport", "mini-gda", "--hidden", "512")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "# SYNTHESIZED: the trace's tokens were made up") {
		t.Errorf("a counts trace's output does not say its tokens are synthesized:\n%s", out)
	}
}

func TestReplayRankMajorTraceMatchesLayerMajor(t *testing.T) {
	t.Parallel()
	args := []string{"--transport", "mini-gda", "--workload", "mixtral-8x7b", "--format", "json"}
	a, err := replayCLI(t, append([]string{"--trace", "testdata/replay/rank-major.jsonl"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := replayCLI(t, append([]string{"--trace", "testdata/replay/layer-major.jsonl"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	da, db := decodeReplay(t, a), decodeReplay(t, b)
	if !reflect.DeepEqual(da.Layers, db.Layers) {
		t.Errorf("rank by rank and layer by layer orders of the same records replay differently:\n%s\n%s", a, b)
	}
}

func TestReplayLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := genTrace(t, dir, "l.bin", "--ranks", "4", "--experts", "8", "--topk", "2", "--tokens", "4", "--layers", "3", "--steps", "3")
	for _, tc := range []struct {
		args []string
		want int
	}{{nil, 9}, {[]string{"--max-layers", "4"}, 4}, {[]string{"--steps", "2"}, 6}, {[]string{"--steps", "2", "--max-layers", "5"}, 5}} {
		out, err := replayCLI(t, append([]string{"--trace", tr, "--transport", "mini-gda", "--hidden", "512", "--format", "json"}, tc.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if d := decodeReplay(t, out); d.Aggregate.Layers != tc.want || len(d.Layers) != tc.want {
			t.Errorf("%v: %d groups, %d entries, want %d", tc.args, d.Aggregate.Layers, len(d.Layers), tc.want)
		}
	}
}

func TestReplayErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := genTrace(t, dir, "good.bin", "--ranks", "4", "--experts", "8", "--topk", "2", "--tokens", "4", "--layers", "2")
	full, _ := os.ReadFile(good)
	cut := filepath.Join(dir, "cut.bin")
	os.WriteFile(cut, full[:len(full)-30], 0o644)
	bad4d := filepath.Join(dir, "bad.npy")
	os.WriteFile(bad4d, npyBytes("<i4", []int{1, 2, 2, 2}, i32bytes(make([]int32, 8))), 0o644)
	oob := filepath.Join(dir, "oob.npz")
	os.WriteFile(oob, npzBytes(t, map[string][]byte{"topk_ids": npyBytes("<i4", []int{2, 2}, i32bytes([]int32{0, 1, 2, 9}))}), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, []byte(`{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1}`+"\n"), 0o644)
	big := genTrace(t, dir, "big.bin", "--ranks", "2", "--gpus-per-node", "2", "--experts", "8", "--topk", "2", "--tokens", "600", "--layers", "1")
	notrace := filepath.Join(dir, "notes.txt")
	os.WriteFile(notrace, []byte("hello\n"), 0o644)
	outDir := t.TempDir()
	out := filepath.Join(outDir, "replay.json")
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no trace", nil, true, "--trace FILE is required"},
		{"argument", []string{good}, true, "takes no arguments"},
		{"missing file", []string{"--trace", filepath.Join(dir, "nope.bin")}, false, "--trace: open " + filepath.Join(dir, "nope.bin") + ": no such file"},
		{"truncated bin", []string{"--trace", cut}, false, "--trace: " + cut + ": record 7 at byte 599: payload of 4 tokens: truncated"},
		{"not a trace", []string{"--trace", notrace}, false, "--trace: --from: " + notrace + ": cannot tell the input format; name it"},
		{"4-D npy", []string{"--trace", bad4d}, false, bad4d + ": topk_ids has shape [1 2 2 2], want [layers, tokens, k] or [tokens, layers, k]"},
		{"ids out of range", []string{"--trace", oob, "--experts", "8"}, false, oob + ": topk_ids[1,1] = 9 is out of range [-1, 8)"},
		{"duplicate expert", []string{"--trace", "testdata/replay/duplicate.jsonl"}, false, "duplicate.jsonl:3: topk_idx[1,1] = 3: the token already picked expert 3 in slot 0"},
		{"missing rank", []string{"--trace", "testdata/replay/missing-rank.jsonl"}, false, "ends with step 0, layer 1 recorded by 1 of 2 ranks (missing 1"},
		{"interleaved beyond buffer", []string{"--trace", "testdata/replay/rank-major.jsonl", "--max-open", "1"}, false, "record 1 (step 0, layer 1, rank 0): more than 1 (step, layer) groups"},
		{"top-k mismatch", []string{"--trace", good, "--topk", "4"}, true, "--topk 4: " + good + " records top-2"},
		{"experts mismatch", []string{"--trace", good, "--experts", "16"}, true, "records 8 logical experts"},
		{"not placeable", []string{"--trace", good, "--ranks", "3"}, true, "its 8 experts cannot be placed evenly on 3 ranks (--ranks)"},
		{"ranks of another EP", []string{"--trace", good, "--ranks", "8"}, true, "record 0 (step 0, layer 0, rank 0): the trace records ranks of EP4"},
		{"nodes", []string{"--trace", good, "--gpus-per-node", "3"}, true, "4 ranks (the trace's ep_size) do not fill whole nodes of 3 GPUs (--gpus-per-node)"},
		{"empty trace", []string{"--trace", empty, "--ranks", "2"}, false, empty + ": nothing to replay: the trace holds no records"},
		{"bad mode", []string{"--trace", good, "--mode", "fast"}, true, "--mode"},
		{"queues too shallow", []string{"--trace", big, "--transport", "mini-gda"}, true,
			big + ": step 0, layer 0: 600 tokens on the busiest rank: preset mini-gda: QP depth too small: the transport's queues hold 1024 WQEs"},
		{"bad format", []string{"--trace", good, "--format", "xml"}, true, "--format"},
		{"bad layout", []string{"--trace", good, "--layout", "diagonal"}, true, "--layout"},
	} {
		var o, e bytes.Buffer
		err := runReplay(append(tc.args, "--out", out), &o, &e)
		if err == nil || !strings.Contains(message(err), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("%s: got %v (usage %v), want %q (usage %v)", tc.name, err, errors.Is(err, errUsage), tc.want, tc.usage)
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Errorf("failed replays left files behind: %v", ents)
	}
}

// TestReplayMemoryBounded replays a trace of many layers and checks that
// the live heap after the last group is no larger than after the first
// few: groups are forgotten once replayed and the accumulators are
// bounded. Not parallel, so that other tests' allocations do not blur the
// heap.
func TestReplayMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	const layers, steps = 300, 2
	tr := genTrace(t, dir, "long.bin", "--ranks", "4", "--gpus-per-node", "2", "--experts", "8", "--topk", "2", "--tokens", "2",
		"--layers", fmt.Sprint(layers), "--steps", fmt.Sprint(steps))
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var early, late uint64
	hook := func(done int) {
		switch done {
		case 50:
			early = heap()
		case layers * steps:
			late = heap()
		}
	}
	if err := replayCommand([]string{"--trace", tr, "--transport", "mini-gda", "--hidden", "128", "--no-payload-check", "--format", "json"}, io.Discard, io.Discard, hook); err != nil {
		t.Fatal(err)
	}
	if early == 0 || late == 0 {
		t.Fatal("the hook did not see the groups")
	}
	// 550 more groups replayed: keeping any group's records or results
	// (kilobytes each) would exceed this.
	if late > early+256<<10 {
		t.Errorf("live heap grew from %d to %d bytes over %d groups", early, late, layers*steps-50)
	}
	t.Logf("live heap after 50 groups %d B, after %d groups %d B", early, layers*steps, late)
}

// Replay checks a trace's tokens against a group limit and reports the
// ones beyond it without changing the routing.
func TestReplayReportsGroupLimitViolations(t *testing.T) {
	t.Parallel()
	trace := "testdata/replay/layer-major.jsonl"
	base := []string{"--trace", trace, "--transport", "mini-gda", "--workload", "mixtral-8x7b"}
	out, err := replayCLI(t, append(base, "--topk-groups", "1", "--expert-groups", "2", "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Header struct {
			Notes []string `json:"notes"`
		} `json:"header"`
		Layers []struct {
			Layer      int            `json:"layer"`
			GroupLimit map[string]int `json:"group_limit"`
			RouteHash  string         `json:"route_hash"`
		} `json:"layers"`
		Aggregate struct {
			GroupLimit map[string]int `json:"group_limit"`
		} `json:"aggregate"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	// Groups {0..3} and {4..7}, one each: layer 0 has four tokens that
	// span both, layer 1 one.
	want := []int{4, 1}
	for i, l := range d.Layers {
		if g := l.GroupLimit; g["tokens"] != 6 || g["tokens_over_limit"] != want[l.Layer] || g["max_groups_per_token"] != 2 || g["topk_groups"] != 1 {
			t.Errorf("entry %d (layer %d): %v, want 6 tokens, %d over the limit", i, l.Layer, g, want[l.Layer])
		}
	}
	if g := d.Aggregate.GroupLimit; g["tokens"] != 12 || g["tokens_over_limit"] != 5 || g["expert_groups"] != 2 {
		t.Errorf("aggregate %v, want 12 tokens, 5 over the limit of 1 of 2 groups", g)
	}
	if notes := strings.Join(d.Header.Notes, "\n"); !strings.Contains(notes, "group limit: top-1 of 2 expert groups, --topk-groups; tokens beyond it are reported, not changed") {
		t.Errorf("header does not state the limit:\n%s", notes)
	}
	// The routing is replayed as recorded: the same hashes without a limit.
	plain, err := replayCLI(t, append(base, "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plain, d.Layers[0].RouteHash) || strings.Contains(plain, `"group_limit"`) {
		t.Error("checking the limit changed the routing, or an unchecked run reports one")
	}
	table, err := replayCLI(t, append(base, "--topk-groups", "1", "--expert-groups", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "Group limit top-1 of 2 expert groups: 5 of 12 tokens (41.7%) span more groups, up to 2") {
		t.Errorf("table lacks the group-limit line:\n%s", table)
	}
	for _, tc := range []struct {
		args []string
		note string
	}{
		{[]string{"--workload", "deepseek-v3"}, "not checked: the trace has 8 experts, workload deepseek-v3's limit is for 256"},
		{nil, "not checked (the workload has none; set --topk-groups)"},
	} {
		out, err := replayCLI(t, append(append(base, tc.args...), "--format", "json")...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tc.note) {
			t.Errorf("%v: header lacks %q", tc.args, tc.note)
		}
	}
	_, err = replayCLI(t, append(base, "--topk-groups", "1", "--expert-groups", "3")...)
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--expert-groups: 8 logical experts do not split into 3 equal groups") {
		t.Errorf("uneven groups: %v, want a usage error naming --expert-groups", err)
	}
}

// A replayed group too large for --max-memory side by side runs dispatch
// and combine in turn, with the same results, as run does; one too large
// even so is refused, naming its step and layer, before it runs.
func TestReplayInTurnToFitMemory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := genTrace(t, dir, "t.bin", "--ranks", "256", "--experts", "2048", "--tokens", "8", "--layers", "2")
	args := []string{"--trace", trace, "--transport", "mini-gda", "--format", "json"}
	c := layerCost(sweep.Point{Shape: deepseekShape(256, 2048, 8), Mode: moe.LL}, "mini-gda", 0)
	want, err := replayCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	budget := strconv.FormatInt((c.Bytes+c.InTurn)/2, 10)
	var out, errb bytes.Buffer
	if err := runReplay(append(args, "--max-memory", budget, "--log-level", "info"), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(errb.String(), "dispatch and combine in turn"); n != 2 {
		t.Errorf("--max-memory %s between %d and %d: %d groups said they ran in turn, want 2:\n%s", budget, c.InTurn, c.Bytes, n, errb.String())
	}
	if g, w := jsonMember(t, out.String(), "layers"), jsonMember(t, want, "layers"); g != w {
		t.Errorf("in turn:\n%s\nside by side:\n%s", g, w)
	}
	_, err = replayCLI(t, append(args, "--max-memory", strconv.FormatInt(c.InTurn-1, 10))...)
	if err == nil || !strings.Contains(err.Error(), "step 0, layer 0") || !strings.Contains(err.Error(), "even with dispatch and combine in turn") {
		t.Errorf("a budget below the in-turn estimate: error %v, want one naming the group and the in-turn estimate", err)
	}
}
