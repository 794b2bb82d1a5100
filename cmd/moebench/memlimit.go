package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"moebench/internal/hugepage"
	"moebench/internal/inputfile"
)

// softMemoryLimit gives the garbage collector a soft limit of the budget
// (--max-memory) or 90% of the memory the system reports available,
// whichever is less, less what the run's mapped arrays hold (which the
// runtime does not count), unless GOMEMLIMIT sets one. A large layer's live
// state grows for most of the run, and the collector's default goal (twice
// the heap live after its last cycle) would otherwise ask for up to twice
// what the run holds, past a budget its estimate fits; near the limit it
// collects more often instead.
func softMemoryLimit(budget int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	total := memAvailable("/proc/meminfo") / 10 * 9
	if budget > 0 && (total <= 0 || budget < total) {
		total = budget
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

// memAvailable reads MemAvailable from a Linux meminfo file, in bytes; 0
// when it cannot.
func memAvailable(path string) int64 { return meminfo(path, "MemAvailable") }

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
