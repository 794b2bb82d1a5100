package main

import (
	"fmt"

	"moebench/internal/inputfile"
)

// Bounds on the JSON files commands read whole, whatever --max-memory
// says: each is far past what its kind holds, and small enough that
// decoding it (a few times its size in memory) cannot exhaust a machine.
// Traces, NumPy arrays and count files are bounded where they are read
// (package traces); profile files in package profile.
const (
	// maxResultBytes bounds a result given to report or merge (a shard is
	// one): a run writes about 3 KB of JSON per transport, so 64 MiB holds
	// some 20,000 results, far more than any study the README shows.
	maxResultBytes = 64 << 20
	// maxMeasuredBytes bounds validate --measured and calibrate
	// --from-raw: a raw measurement is tens of KB (one entry per size,
	// ordering and grid point); 16 MiB, as for the profile fragment that
	// carries one (profile.MaxFileBytes).
	maxMeasuredBytes = 16 << 20
)

// readResult reads a result JSON file for report or merge.
func readResult(path string) ([]byte, error) {
	return inputfile.ReadFile(path, "a moebench JSON result", maxResultBytes)
}

// readMeasured reads a raw measurement file given with flag.
func readMeasured(flag, path string) ([]byte, error) {
	data, err := inputfile.ReadFile(path, "a raw measurement", maxMeasuredBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return data, nil
}
