package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// softMemoryLimit gives the garbage collector a soft limit of 90% of the
// memory the system reports available, unless GOMEMLIMIT sets one. A
// large layer's live state grows for most of the run, and the collector's
// default goal (twice the heap live after its last cycle) would otherwise
// ask for up to twice what the run holds; near the limit it collects
// more often instead.
func softMemoryLimit() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if avail := memAvailable("/proc/meminfo"); avail > 0 {
		debug.SetMemoryLimit(avail / 10 * 9)
	}
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
	sc := bufio.NewScanner(f)
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
