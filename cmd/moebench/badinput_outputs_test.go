package main

import (
	"os"
	"path/filepath"
)

// badInputsOutputs are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsOutputs() []badInput {
	const (
		trace = `{"format":"moebench-trace","version":1,"id_space":"logical","experts":8,"top_k":2,"layers":1,"ep_size":2}` + "\n" +
			`{"step":0,"layer":0,"rank":0,"topk_idx":[[1,2]]}` + "\n" + `{"step":0,"layer":0,"rank":1,"topk_idx":[[3,4]]}` + "\n"
		prof = `{"name": "mine", "base": "p-ib"}`
	)
	f := fileOf
	files := func(kv ...string) map[string][]byte {
		m := map[string][]byte{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []byte(kv[i+1])
		}
		return m
	}
	// Setups: a private file, links to a file, what a link chain loops on.
	private := func(name string) func(string) error {
		return func(dir string) error { return os.Chmod(filepath.Join(dir, name), 0o600) }
	}
	symlink := func(link, to string) func(string) error {
		return func(dir string) error { return os.Symlink(to, filepath.Join(dir, link)) }
	}
	hardlink := func(link, to string) func(string) error {
		return func(dir string) error { return os.Link(filepath.Join(dir, to), filepath.Join(dir, link)) }
	}
	return []badInput{
		// An output that is an input, through any name.
		{name: "outputs replay out is its trace", args: []string{"replay", "--trace", "t.jsonl", "--out", "t.jsonl"},
			files: f("t.jsonl", trace), setup: private("t.jsonl"), code: 2, msg: "--out t.jsonl is the input --trace t.jsonl"},
		{name: "outputs replay out is its trace through dot segments", args: []string{"replay", "--trace", "t.jsonl", "--out", "./x/../t.jsonl"},
			files: f("t.jsonl", trace), setup: func(dir string) error { return os.Mkdir(filepath.Join(dir, "x"), 0o755) }, code: 2, msg: "--trace t.jsonl"},
		{name: "outputs replay out is a link to its trace", args: []string{"replay", "--trace", "t.jsonl", "--out", "o.json"},
			files: f("t.jsonl", trace), setup: symlink("o.json", "t.jsonl"), code: 2, msg: "--out o.json"},
		{name: "outputs replay out is a hard link of its trace", args: []string{"replay", "--trace", "t.jsonl", "--out", "o.json"},
			files: f("t.jsonl", trace), setup: hardlink("o.json", "t.jsonl"), code: 2, msg: "--out o.json"},
		{name: "outputs replay plot is its trace", args: []string{"replay", "--trace", "t.svg", "--from", "jsonl", "--plot", "t.svg"},
			files: f("t.svg", trace), code: 2, msg: "--plot t.svg"},
		{name: "outputs replay out is its profile", args: []string{"replay", "--trace", "t.jsonl", "--profile", "p.json", "--out", "p.json"},
			files: files("t.jsonl", trace, "p.json", prof), code: 2, msg: "--profile p.json"},
		{name: "outputs trace convert out is its input", args: []string{"trace", "convert", "a.jsonl", "--out", "a.jsonl"},
			files: f("a.jsonl", trace), code: 2, msg: "--out a.jsonl"},
		{name: "outputs trace convert out is a link to its input", args: []string{"trace", "convert", "a.jsonl", "--out", "b.jsonl"},
			files: f("a.jsonl", trace), setup: symlink("b.jsonl", "a.jsonl"), code: 2, msg: "--out b.jsonl"},
		{name: "outputs report out is its input", args: []string{"report", "r.json", "--out", "r.json"},
			files: f("r.json", "{}"), code: 2, msg: "--out r.json is the input r.json"},
		{name: "outputs report out is a hard link of its input", args: []string{"report", "r.json", "--out", "page.html"},
			files: f("r.json", "{}"), setup: hardlink("page.html", "r.json"), code: 2, msg: "--out page.html"},
		{name: "outputs report out in a missing directory", args: []string{"report", "r.json", "--out", "no/such/page.html"},
			files: f("r.json", "{}"), code: 2, msg: "no/such"},
		{name: "outputs merge out is a shard", args: []string{"merge", "a.json", "b.json", "--out", "b.json"},
			files: files("a.json", "{}", "b.json", "{}"), code: 2, msg: "--out b.json is the input b.json"},
		{name: "outputs validate out is measured", args: []string{"validate", "--measured", "m.json", "--out", "m.json"},
			files: f("m.json", "{}"), code: 2, msg: "--measured m.json"},
		{name: "outputs run out is its profile", args: []string{"run", "--tokens", "8", "--profile", "p.json", "--out", "p.json"},
			files: f("p.json", prof), code: 2, msg: "--profile p.json"},
		{name: "outputs run out is its profile's base", args: []string{"run", "--tokens", "8", "--profile", "p.json", "--out", "b.json"},
			files: files("p.json", `{"name": "mine", "base": "b.json"}`, "b.json", prof), code: 2, msg: "--out b.json"},
		{name: "outputs mech out is its profile", args: []string{"mech", "single", "--profile", "p.json", "--out", "p.json"},
			files: f("p.json", prof), code: 2, msg: "--profile p.json"},
		{name: "outputs profile out is the profile shown", args: []string{"profile", "p.json", "--out", "p.json"},
			files: f("p.json", prof), code: 2, msg: "--out p.json"},
		{name: "outputs calibrate raw is from-raw", args: []string{"calibrate", "--from-raw", "r.json", "--raw", "r.json", "--out", "c.json"},
			files: f("r.json", "{}"), code: 2, msg: "--raw r.json is the input --from-raw r.json"},
		{name: "outputs replay out is one of its traces", args: []string{"replay", "--from", "sglang-stat-csv", "--topk", "2", "--trace", "a.csv,b.csv", "--out", "b.csv"},
			files: files("a.csv", "1,2\n", "b.csv", "3,4\n"), code: 2, msg: "--trace b.csv"},
		{name: "outputs merge out is a shard through a linked folder", args: []string{"merge", "a.json", "--out", "here/a.json"},
			files: f("a.json", "{}"), setup: symlink("here", "."), code: 2, msg: "--out here/a.json"},
		{name: "outputs validate plot is its profile", args: []string{"validate", "--only", "inline", "--profile", "p.svg", "--plot", "p.svg"},
			files: f("p.svg", prof), code: 2, msg: "--profile p.svg"},
		{name: "outputs calibrate raw to stdout", args: []string{"calibrate", "--from-raw", "r.json", "--raw", "-"},
			files: f("r.json", "{}"), code: 2, msg: "--raw -"},
		{name: "outputs calibrate out is from-raw", args: []string{"calibrate", "--from-raw", "calibration.json"},
			files: f("calibration.json", "{}"), code: 2, msg: "--out calibration.json"},

		// Two outputs in one file.
		{name: "outputs run out is plot", args: []string{"run", "--tokens", "8", "--out", "x.svg", "--plot", "x.svg"},
			code: 2, msg: "--plot x.svg is also --out"},
		{name: "outputs sweep plot is out through a link", args: []string{"sweep", "--tokens", "8", "--out", "l.svg", "--plot", "x.svg"},
			setup: symlink("l.svg", "x.svg"), code: 2, msg: "--plot x.svg"},
		{name: "outputs size plot is out", args: []string{"size", "--ranks", "16", "--tokens", "8", "--out", "s.svg", "--plot", "./s.svg"},
			code: 2, msg: "--plot ./s.svg"},
		{name: "outputs merge plot is out", args: []string{"merge", "a.json", "--out", "m.svg", "--plot", "m.svg"},
			files: f("a.json", "{}"), code: 2, msg: "--plot m.svg"},
		{name: "outputs calibrate raw is out", args: []string{"calibrate", "--from-raw", "r.json", "--out", "a.json", "--raw", "a.json"},
			files: f("r.json", "{}"), code: 2, msg: "--raw a.json"},
		{name: "outputs out is a link loop", args: []string{"run", "--tokens", "8", "--out", "l1"},
			setup: func(dir string) error {
				if err := os.Symlink("l2", filepath.Join(dir, "l1")); err != nil {
					return err
				}
				return os.Symlink("l1", filepath.Join(dir, "l2"))
			}, code: 2, msg: "--out"},

		// A run that fails after its work writes no file, and changes no
		// existing one (content or mode).
		{name: "outputs size without an answer writes nothing", args: []string{"size", "--ranks", "16", "--tokens", "8", "--transport", "mini-gda", "--target-us", "70", "--out", "s.json", "--plot", "s.svg"},
			files: f("s.json", "old"), setup: private("s.json"), code: 1, msg: "no candidate meets the limits"},
		{name: "outputs validate above fail-above writes nothing", args: []string{"validate", "--only", "inline", "--fail-above", "0.0001", "--out", "v.json", "--plot", "v.svg"},
			code: 1, msg: "above --fail-above"},
	}
}
