package results_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"moebench/results"
)

// A result at the bound is read; one byte past it is refused, naming the
// file and the bound, before it is read.
func TestReadFileBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		size int64
		want string
	}{
		{results.MaxFileBytes, ""},
		{results.MaxFileBytes + 1, "past.json: larger than 64 MiB, the most a moebench JSON result can be"},
	} {
		path := filepath.Join(dir, map[bool]string{true: "at.json", false: "past.json"}[tc.want == ""])
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(tc.size); err != nil { // sparse: no disk used
			t.Fatal(err)
		}
		f.Close()
		data, err := results.ReadFile(path)
		switch {
		case tc.want == "" && (err != nil || int64(len(data)) != tc.size):
			t.Errorf("%d bytes: read %d, %v", tc.size, len(data), err)
		case tc.want != "" && (err == nil || err.Error() != filepath.Join(dir, tc.want)):
			t.Errorf("%d bytes: got %v, want %q", tc.size, err, tc.want)
		}
	}
}

// Shards come back in index order; a file missing or not a shard is
// refused naming it.
func TestReadShards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	shardOf := func(i int) string {
		return fmt.Sprintf(`{"header": {"tool": "moebench", "command": "size"}, "shard": {"index": %d, "count": 2, "total": 5, "study": "s"}}`, i)
	}
	one, zero := write("one.json", shardOf(1)), write("zero.json", shardOf(0))
	notShard := write("run.json", `{"header": {"tool": "moebench", "command": "run"}}`)
	shards, err := results.ReadShards([]string{one, zero})
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != 2 || shards[0].Path != zero || shards[1].Path != one || shards[0].Header.Command != "size" {
		t.Errorf("shards %v, want zero.json then one.json, of size", shards)
	}
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{zero, filepath.Join(dir, "none.json")}, "none.json"},
		{[]string{zero, notShard}, "run.json: not a shard"},
		{[]string{zero}, "1 of 2 shards missing"},
	} {
		if _, err := results.ReadShards(tc.paths); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.paths, err, tc.want)
		}
	}
}
