package results

import (
	"moebench/internal/inputfile"
	"moebench/internal/shard"
)

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

// ReadShards reads the shards at paths (ReadFile) and cross-checks them
// (shard.Check): one study, every index once. They come back in index
// order.
func ReadShards(paths []string) ([]shard.File, error) {
	files := make([]shard.File, 0, len(paths))
	for _, p := range paths {
		data, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		files = append(files, shard.File{Path: p, Data: data})
	}
	return shard.Check(files)
}
