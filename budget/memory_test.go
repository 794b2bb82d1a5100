package budget

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"moebench/internal/hugepage"
)

// The runtime's limit falls by what mapped arrays hold and comes back as
// they go. Other tests' arrays may come and go meanwhile (a dropped slab's
// are unmapped by the collector), so each check compares the limit with
// what is mapped at that moment, not with a figure read before.
func TestLimitHeapLeavesRoomForMapped(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		hugepage.Watch(nil)
		debug.SetMemoryLimit(prev)
	})
	check := func(what string, total int64) {
		t.Helper()
		if got, want := heapLimitFor(total); got != want {
			t.Errorf("%s: the limit is %d, want %d", what, got, want)
		}
	}
	const total, n = 8 << 30, 64 << 20
	limitHeap(total)
	check("at the start", total)
	a := hugepage.Mapped[byte](n)
	check("with 64 MiB more mapped", total)
	hugepage.Unmap(a)
	check("after the unmap", total)
	a = hugepage.Mapped[byte](n)
	defer hugepage.Unmap(a)
	limitHeap(10 << 20) // less than what is mapped: a tenth of it holds
	check("a total below the mapped bytes", 10<<20)
}

// heapLimitFor reads the runtime's limit and the one limitHeap(total)
// keeps, retrying while another test's arrays come or go between the two
// reads.
func heapLimitFor(total int64) (got, want int64) {
	for range 100 {
		m := hugepage.MappedBytes()
		got, want = debug.SetMemoryLimit(-1), max(total-m, total/10)
		if got == want && hugepage.MappedBytes() == m {
			break
		}
	}
	return got, want
}

// A --max-memory below what the machine has bounds the collector's goal;
// one above it leaves the machine's limit. GOMEMLIMIT, set, wins.
func TestSoftMemoryLimitFollowsTheBudget(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		hugepage.Watch(nil)
		debug.SetMemoryLimit(prev)
	})
	avail := MemAvailable("/proc/meminfo")
	if avail < 2<<30 {
		t.Skipf("needs /proc/meminfo and 2 GiB available (have %d bytes)", avail)
	}
	t.Setenv("GOMEMLIMIT", "")
	const budget = 1 << 30
	SoftLimit(Budget{Bytes: budget})
	if got, want := heapLimitFor(budget); got != want {
		t.Errorf("--max-memory 1GiB: the limit is %d, want %d", got, want)
	}
	SoftLimit(Budget{Bytes: 1 << 50})
	if got := debug.SetMemoryLimit(-1); got <= budget || got > avail*2 {
		t.Errorf("a budget past the machine's memory: the limit is %d, want the machine's (about %d)", got, avail/10*9)
	}
	t.Setenv("GOMEMLIMIT", "123MiB")
	hugepage.Watch(nil) // no unmap may reset what this part checks
	debug.SetMemoryLimit(prev)
	SoftLimit(Budget{Bytes: budget})
	if got := debug.SetMemoryLimit(-1); got != prev {
		t.Errorf("with GOMEMLIMIT set: the limit is %d, want it left at %d", got, prev)
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
		if got := MemAvailable(p); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := MemAvailable(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("missing file: %d, want 0", got)
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"8GiB", "500MB", "1073741824", "1.5g", " 2 KiB ", "0", "-1", "1e3", "9999999999TiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBytes(s)
		if err != nil {
			return
		}
		if v < 1 {
			t.Fatalf("ParseBytes(%q) = %d, below 1 byte", s, v)
		}
	})
}

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int64{"8GiB": 8 << 30, "500MB": 500e6, "1024": 1024, "1.5g": 3 << 29, " 2 KiB ": 2048, "1t": 1 << 40} {
		if v, err := ParseBytes(s); err != nil || v != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", s, v, err, want)
		}
	}
	for _, s := range []string{"", "0", "-1", "GiB", "1e3", "3 parsecs", "1..2G", "9999999999TiB"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("ParseBytes(%q) accepted", s)
		}
	}
}
