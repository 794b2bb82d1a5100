package budget

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"moebench/internal/hugepage"
	"moebench/internal/inputfile"
	"moebench/internal/report"
)

// ParseBytes reads a size: a number with an optional unit, B, KB, MB, GB,
// TB (powers of 1000) or K, KiB, M, MiB, G, GiB, T, TiB (powers of 1024).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("%s is not a size (want e.g. 8GiB, 500MB or 1073741824)", report.Quote(s))
	}
	mult := map[string]float64{"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%s: unknown unit %s (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", report.Quote(s), report.Quote(unit))
	}
	b := v * mult
	if b < 1 || b >= math.MaxInt64 {
		return 0, fmt.Errorf("%s is out of range (want at least 1 byte)", report.Quote(s))
	}
	return int64(b), nil
}

// Machine is the budget of this machine's physical memory (MemTotal), or
// no limit where it cannot be read.
func Machine() Budget { return Budget{Bytes: meminfo("/proc/meminfo", "MemTotal")} }

// SoftLimit gives the garbage collector a soft limit of the budget or 90%
// of the memory the system reports available, whichever is less, less
// what the run's mapped arrays hold (which the runtime does not count),
// unless GOMEMLIMIT sets one. A large layer's live state grows for most of
// the run, and the collector's default goal (twice the heap live after its
// last cycle) would otherwise ask for up to twice what the run holds, past
// a budget its estimate fits; near the limit it collects more often
// instead.
func SoftLimit(b Budget) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	total := MemAvailable("/proc/meminfo") / 10 * 9
	if b.Bytes > 0 && (total <= 0 || b.Bytes < total) {
		total = b.Bytes
	}
	if total > 0 {
		limitHeap(total)
	}
}

// limitHeap keeps the runtime's memory limit at total less what mapped
// arrays hold, from now on.
func limitHeap(total int64) {
	l := &heapLimit{total: total}
	l.set()
	hugepage.Watch(l.set)
}

// heapLimit keeps the runtime's memory limit at total less the mapped
// arrays, as they come and go.
type heapLimit struct {
	mu    sync.Mutex // calls may race; each sets what is mapped when it runs
	total int64
}

// set gives the runtime what the mapped arrays leave of the total, and at
// least a tenth of it: a limit below the live heap only makes the
// collector run without end.
func (l *heapLimit) set() {
	l.mu.Lock()
	defer l.mu.Unlock()
	debug.SetMemoryLimit(max(l.total-hugepage.MappedBytes(), l.total/10))
}

// MemAvailable reads MemAvailable from a Linux meminfo file, in bytes; 0
// when it cannot.
func MemAvailable(path string) int64 { return meminfo(path, "MemAvailable") }

// meminfo reads the field key of a Linux meminfo file, in bytes; 0 when it
// cannot.
func meminfo(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	// meminfo is a few KB; a file past 1 MiB is not one.
	sc := bufio.NewScanner(inputfile.NewReader(f, path, "a meminfo file", 1<<20))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), key+":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}
