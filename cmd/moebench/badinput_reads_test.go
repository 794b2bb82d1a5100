package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"os"
	"path/filepath"
	"strings"
)

// badInputsReads are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
//
// Inputs too large to hash twice (listDir) lie beside the run's directory,
// named "../NAME": sparse files (os.Truncate) that use no disk.
func badInputsReads() []badInput {
	f := fileOf
	const (
		traceHead = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n"
		fullProf  = `{"name": "q", "base": "p-ib"}`
	)
	// sparse writes head to ../name and extends it, unwritten, to size.
	sparse := func(name, head string, size int64) func(string) error {
		return func(dir string) error {
			p := filepath.Join(dir, "..", name)
			if err := os.WriteFile(p, []byte(head), 0o644); err != nil {
				return err
			}
			return os.Truncate(p, size)
		}
	}
	// write writes files under dir, making their folders.
	write := func(files map[string]string) func(string) error {
		return func(dir string) error {
			for name, content := range files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					return err
				}
			}
			return nil
		}
	}
	// 16 GiB of int64 ids declared, in the array and the zip; 16 MiB of
	// zeros deflated behind them.
	bomb := func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "a.npz"), zipBomb("topk_ids.npy", npy("<i8", "(1073741823, 2)", nil), 16<<20, 16<<30-16), 0o644)
	}
	return []badInput{
		// Profile files: bounded, named, data (exit 1) unless a built-in name is unknown.
		{name: "reads profile /dev/zero", args: []string{"run", "--profile", "/dev/zero"}, code: 1, msg: "/dev/zero: larger than 16 MiB"},
		{name: "reads profile huge sparse file", args: []string{"run", "--profile", "../p.json"},
			setup: sparse("p.json", `{"name": "x", "description": "`, 300<<20), code: 1, msg: "../p.json: larger than 16 MiB"},
		{name: "reads profile file missing", args: []string{"run", "--profile", "nope.json"}, code: 1, msg: "nope.json"},
		{name: "reads profile base unknown built-in", args: []string{"run", "--profile", "p.json"},
			files: f("p.json", `{"name": "x", "base": "p-xyz"}`), code: 1, msg: "p-xyz"},
		{name: "reads profile base loop of two told once", args: []string{"run", "--profile", "p.json"},
			files: map[string][]byte{"p.json": []byte(`{"name": "p", "base": "q.json"}`), "q.json": []byte(`{"name": "q", "base": "p.json"}`)},
			code:  1, msg: "its chain of bases loops: p.json → q.json → p.json"},
		{name: "reads profile relative base beside the file", args: []string{"run", "--tokens", "1", "--profile", "sub/p.json"},
			setup: write(map[string]string{"sub/p.json": `{"name": "p", "base": "q.json"}`, "q.json": fullProf}), code: 1, msg: "sub/q.json"},
		{name: "reads profile field of the wrong kind", args: []string{"run", "--profile", "p.json"},
			files: f("p.json", `{"name": 5}`), code: 1, msg: "p.json:1: field name: want a string, not a number"},
		{name: "reads profile constant value of the wrong kind", args: []string{"run", "--profile", "p.json"},
			files: f("p.json", `{"name": "x", "constants": [{"name": "gpu.sm_clock_mhz", "value": "fast", "source": "s"}]}`),
			code:  1, msg: "constants[0]: field value: want a number, not a string"},
		{name: "reads calibrate base file malformed", args: []string{"calibrate", "--base", "p.json", "--from-raw", "r.json"},
			files: map[string][]byte{"p.json": []byte(`{"name": "x",}`), "r.json": []byte("{}")}, code: 1, msg: "p.json:1"},

		// Results for report and merge, shards.
		{name: "reads report /dev/zero", args: []string{"report", "/dev/zero"}, code: 1, msg: "/dev/zero: larger than 64 MiB"},
		{name: "reads report huge sparse result", args: []string{"report", "../r.json"},
			setup: sparse("r.json", `{"header": {"command": "run"}, "x": "`, 1<<30), code: 1, msg: "../r.json: larger than 64 MiB"},
		{name: "reads merge /dev/zero", args: []string{"merge", "/dev/zero"}, code: 1, msg: "/dev/zero: larger than 64 MiB"},
		{name: "reads merge huge sparse shard", args: []string{"merge", "../s.json"},
			setup: sparse("s.json", `{"header": {"command": "sweep"}, "x": "`, 1<<30), code: 1, msg: "../s.json: larger than 64 MiB"},
		{name: "reads report field of the wrong kind", args: []string{"report", "r.json"},
			files: f("r.json", "{\"header\": {\n\"command\": 5}}"), code: 1, msg: "r.json: not a moebench JSON result: line 2: field header.command: want a string, not a number"},
		{name: "reads report run result of the wrong kind", args: []string{"report", "r.json"},
			files: f("r.json", `{"header": {"command": "run"}, "results": {}}`), code: 1, msg: "r.json: line 1: field results: want an array, not an object"},
		{name: "reads merge shard index of the wrong kind", args: []string{"merge", "s.json"},
			files: f("s.json", `{"header": {"command": "sweep"}, "shard": {"index": "0"}}`), code: 1, msg: "field shard.index: want a whole number, not a string"},
		{name: "reads merge shard header of the wrong kind", args: []string{"merge", "s.json"},
			files: f("s.json", `{"header": {"command": 1}, "shard": {"index": 0}}`), code: 1, msg: "s.json:1: field header.command: want a string, not a number"},

		// Measurements.
		{name: "reads validate measured /dev/zero", args: []string{"validate", "--measured", "/dev/zero"}, code: 1, msg: "/dev/zero: larger than 16 MiB"},
		{name: "reads validate measured huge sparse file", args: []string{"validate", "--measured", "../m.json"},
			setup: sparse("m.json", `{"gpu": "`, 1<<30), code: 1, msg: "../m.json: larger than 16 MiB"},
		{name: "reads validate measured of the wrong kind", args: []string{"validate", "--measured", "m.json"},
			files: f("m.json", `{"issue_ns": "fast"}`), code: 1, msg: "field issue_ns: want an object, not a string"},
		{name: "reads calibrate from-raw /dev/zero", args: []string{"calibrate", "--from-raw", "/dev/zero"}, code: 1, msg: "/dev/zero: larger than 16 MiB"},
		{name: "reads calibrate layer from-raw /dev/zero", args: []string{"calibrate", "--layer", "--from-raw", "/dev/zero"}, code: 1, msg: "/dev/zero: larger than 16 MiB"},
		{name: "reads calibrate from-raw of the wrong kind", args: []string{"calibrate", "--from-raw", "r.json"},
			files: f("r.json", `{"sms": "many"}`), code: 1, msg: "field sms: want a whole number, not a string"},

		// Traces: a line of JSON lines, NumPy arrays, zip members, count CSVs.
		{name: "reads trace inspect endless jsonl record", args: []string{"trace", "inspect", "../t.jsonl"},
			setup: sparse("t.jsonl", traceHead+`{"step": 0, "x": "`, 1<<30), code: 1, msg: "../t.jsonl:2: a line longer than 64 MiB"},
		{name: "reads replay endless jsonl header", args: []string{"replay", "--trace", "../t.jsonl"},
			setup: sparse("t.jsonl", `{"format": "`, 1<<30), code: 1, msg: "../t.jsonl:1: a line longer than 64 MiB"},
		{name: "reads trace convert jsonl record names the input", args: []string{"trace", "convert", "a.jsonl", "--out", "t.bin"},
			files: f("a.jsonl", traceHead+`{"step":"x","layer":0,"rank":0,"topk_idx":[[1,2]]}`+"\n"), code: 1, msg: "moebench: a.jsonl:2: field step: want a whole number, not a string"},
		{name: "reads replay npy sparse 8 GiB array", args: []string{"replay", "--trace", "../a.npy"},
			setup: sparse("a.npy", string(npy("<i8", "(1073741824,)", nil)), 8<<30+128), code: 1, msg: "more than 4 GiB"},
		{name: "reads trace convert npz bomb", args: []string{"trace", "convert", "a.npz", "--out", "t.bin"},
			setup: bomb, code: 1, msg: "a.npz: topk_ids: declares 17179869296 bytes inflated, more than an array's 4 GiB"},
		{name: "reads replay npz bomb", args: []string{"replay", "--trace", "a.npz"},
			setup: bomb, code: 1, msg: "more than an array's 4 GiB"},
		{name: "reads trace convert npz array over the bound", args: []string{"trace", "convert", "a.npz", "--out", "t.bin"},
			files: map[string][]byte{"a.npz": npz("topk_ids.npy", npy("<i8", "(1073741823, 2)", nil))}, code: 1, msg: "more than 4 GiB, the most an array can be"},
		{name: "reads trace convert eplb /dev/zero", args: []string{"trace", "convert", "--from", "eplb", "--topk", "8", "/dev/zero", "--out", "t.bin"},
			code: 1, msg: "/dev/zero:1: a line longer than 16 MiB"},
		{name: "reads trace convert eplb csv over the bound", args: []string{"trace", "convert", "--from", "eplb", "--topk", "1", "w.csv", "--out", "t.bin"},
			setup: func(dir string) error {
				// 64 layers of 300,000 experts: 38 MB, wide rows, as few as a real matrix's.
				row := strings.Repeat("1,", 299999) + "1\n"
				return os.WriteFile(filepath.Join(dir, "w.csv"), []byte(strings.Repeat(row, 64)), 0o644)
			}, code: 1, msg: "w.csv: larger than 32 MiB"},
		{name: "reads trace convert sglang csv /dev/zero", args: []string{"trace", "convert", "--from", "sglang-stat-csv", "--topk", "8", "/dev/zero", "--out", "t.bin"},
			code: 1, msg: "/dev/zero:1: a line longer than 1 MiB"},
	}
}

// zipBomb returns a zip of one deflated member: head, then zeros bytes of
// zeros, with its directory entry declaring declared bytes inflated.
func zipBomb(name string, head []byte, zeros int, declared uint64) []byte {
	var body bytes.Buffer
	fw, _ := flate.NewWriter(&body, flate.BestSpeed)
	fw.Write(head)
	fw.Write(make([]byte, zeros))
	fw.Close()
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	w, _ := z.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate,
		CompressedSize64: uint64(body.Len()), UncompressedSize64: declared + uint64(len(head))})
	w.Write(body.Bytes())
	z.Close()
	return b.Bytes()
}
