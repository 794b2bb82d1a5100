package results

import "moebench/internal/inputfile"

// MaxFileBytes bounds a result read whole (report's and merge's inputs;
// a shard is one), whatever the memory budget says: a run writes about
// 3 KB of JSON per transport, so 64 MiB holds some 20,000 results, far
// more than any study the README shows, and decoding it (a few times its
// size in memory) cannot exhaust a machine.
const MaxFileBytes = 64 << 20

// ReadFile reads the JSON result at path, refusing one past MaxFileBytes
// (an error naming the file and the bound).
func ReadFile(path string) ([]byte, error) {
	return inputfile.ReadFile(path, "a moebench JSON result", MaxFileBytes)
}
