package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemAvailable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		want       int64
	}{
		{"linux", "MemTotal:       24000000 kB\nMemFree:        20000000 kB\nMemAvailable:   18000000 kB\n", 18000000 * 1024},
		{"absent", "MemTotal:       24000000 kB\n", 0},
		{"garbled", "MemAvailable:   lots kB\n", 0},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := memAvailable(p); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := memAvailable(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing file: %d, want 0", got)
	}
}
