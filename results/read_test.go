package results_test

import (
	"os"
	"path/filepath"
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
