package native

import "moebench/internal/inputfile"

// MaxRawBytes bounds a raw measurement read whole (calibrate --raw's
// record, read back to fit again or to validate against): one is tens of
// KB (an entry per size, ordering and grid point); 16 MiB, as for the
// profile fragment that carries one (profile.MaxFileBytes).
const MaxRawBytes = 16 << 20

// ReadRaw reads the raw measurement at path, refusing one past
// MaxRawBytes (an error naming the file and the bound).
func ReadRaw(path string) ([]byte, error) {
	return inputfile.ReadFile(path, "a raw measurement", MaxRawBytes)
}
