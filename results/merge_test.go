package results

import (
	"strings"
	"testing"

	"moebench/internal/shard"
)

func TestMergeSizeRefusesShardsThatDoNotMakeTheStudy(t *testing.T) {
	t.Parallel()
	file := func(path string, index, total int, limits, candidates string) shard.File {
		data := `{"header":{},"shard":{},"limits":` + limits + `,"candidates":[` + candidates + `]}`
		return shard.File{Path: path, Data: []byte(data), Info: shard.Info{Index: index, Count: 2, Total: total}}
	}
	lim := `{"tolerance":0.05}`
	for _, tc := range []struct {
		name   string
		shards []shard.File
		want   string
	}{
		{"limits differ", []shard.File{file("a.json", 0, 2, lim, `{"index":0}`), file("b.json", 1, 2, `{"tolerance":0.1}`, `{"index":1}`)},
			"b.json: limits differ from a.json's"},
		{"another shard's candidate", []shard.File{file("a.json", 0, 2, lim, `{"index":1}`), file("b.json", 1, 2, lim, `{"index":1}`)},
			"a.json: candidate 1 is not shard 0's"},
		{"candidates missing", []shard.File{file("a.json", 0, 3, lim, `{"index":0}`), file("b.json", 1, 3, lim, `{"index":1}`)},
			"merge: 2 candidates in the shards, the study has 3"},
		{"not JSON", []shard.File{{Path: "a.json", Data: []byte("{")}}, "a.json"},
	} {
		_, err := MergeSize(tc.shards)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}
