package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"moebench/internal/hugepage"
)

// TestSoftMemoryLimitLeavesRoomForMapped checks that the runtime's limit
// falls by what a mapped array holds and comes back when it goes. Not
// parallel: other tests' runs map arrays too.
func TestSoftMemoryLimitLeavesRoomForMapped(t *testing.T) {
	if memAvailable("/proc/meminfo") == 0 {
		t.Skip("no /proc/meminfo: no limit is set")
	}
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		hugepage.Watch(nil)
		debug.SetMemoryLimit(prev)
	})
	softMemoryLimit()
	before := debug.SetMemoryLimit(-1)
	const n = 64 << 20
	a := hugepage.Mapped[byte](n)
	if got := debug.SetMemoryLimit(-1); got != before-n {
		t.Errorf("with %d B mapped the limit is %d, want %d", n, got, before-n)
	}
	hugepage.Unmap(a)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after the unmap the limit is %d, want %d", got, before)
	}
	var l heapLimit
	l.total = 10 << 20 // less than what is mapped: the floor holds
	a = hugepage.Mapped[byte](n)
	defer hugepage.Unmap(a)
	l.set()
	if got := debug.SetMemoryLimit(-1); got != 1<<20 {
		t.Errorf("total below the mapped bytes: limit %d, want a tenth of the total, %d", got, 1<<20)
	}
}

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
