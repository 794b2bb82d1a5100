package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTraceCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "g.bin")
	jsonl := filepath.Join(dir, "g.jsonl")
	back := filepath.Join(dir, "back.bin")
	csv := filepath.Join(dir, "rank0.csv")
	os.WriteFile(csv, []byte("layer_id,expert_id,count\n0,0,3\n0,1,1\n"), 0o644)
	gen := []string{"trace", "gen", "--routing", "powerlaw:1.1", "--layers", "2", "--ranks", "2", "--tokens", "8", "--weights", "--seed", "3"}
	for _, tc := range []struct {
		name string
		args []string
		want string // in stdout
	}{
		{"help", []string{"trace", "--help"}, "gen      write a synthetic trace"},
		{"gen help", []string{"trace", "gen", "--help"}, "Examples:"},
		{"gen bin", append(gen, "--out", bin), ""},
		{"gen jsonl stdout", append(gen, "--out", "-"), `"format":"moebench-trace"`},
		{"to jsonl", []string{"trace", "convert", bin, "--out", jsonl}, ""},
		{"back to bin", []string{"trace", "convert", jsonl, "--out", back}, ""},
		{"inspect", []string{"trace", "inspect", back}, "imbalance (max/mean tokens per expert)"},
		{"inspect json", []string{"trace", "inspect", jsonl, "--format", "json"}, `"top1_share"`},
		{"counts", []string{"trace", "convert", csv, "--topk", "2", "--out", filepath.Join(dir, "c.bin")}, ""},
	} {
		var out, errb bytes.Buffer
		if err := run(tc.args, &out, &errb); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Fatalf("%s: stdout lacks %q:\n%s", tc.name, tc.want, out.String())
		}
	}
	a, _ := os.ReadFile(bin)
	b, _ := os.ReadFile(back)
	if !bytes.Equal(a, b) {
		t.Fatal("bin → jsonl → bin is not byte-identical")
	}
	var out bytes.Buffer
	runTrace([]string{"inspect", filepath.Join(dir, "c.bin")}, &out, &out)
	if !strings.Contains(out.String(), "synthesized  yes") {
		t.Fatalf("inspect of counts does not say synthesized:\n%s", out.String())
	}
}

func TestTraceErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("layer_id,expert_id,count\n0,x,1\n"), 0o644)
	out := filepath.Join(dir, "out.bin")
	for _, tc := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"no subcommand", []string{"trace"}, true, "needs a subcommand"},
		{"gen without out", []string{"trace", "gen"}, true, "--out is required"},
		{"bad routing", []string{"trace", "gen", "--routing", "zipf", "--out", out}, true, `routing "zipf"`},
		{"binary to stdout", []string{"trace", "gen", "--format", "bin", "--out", "-"}, true, "writes only jsonl"},
		{"bad flag", []string{"trace", "inspect", "--colour"}, true, "unknown flag"},
		{"bad csv", []string{"trace", "convert", bad, "--from", "sglang-stat-csv", "--topk", "2", "--out", out}, false, `bad.csv:2: expert_id "x" is not an integer`},
		{"missing file", []string{"trace", "inspect", filepath.Join(dir, "nope.bin")}, false, "no such file"},
	} {
		var o, e bytes.Buffer
		err := runTrace(tc.args[1:], &o, &e)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, errUsage) != tc.usage {
			t.Errorf("%s: got %v (usage %v), want %q (usage %v)", tc.name, err, errors.Is(err, errUsage), tc.want, tc.usage)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("failed runs left files behind: %v", ents)
	}
}
