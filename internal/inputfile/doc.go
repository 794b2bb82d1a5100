// Package inputfile reads the files moebench is given as input. Whole files
// (a profile, a result, a measurement) come back as bytes, and streams (a
// trace, a zip member) as readers, each stopped at a bound on what its kind
// can reasonably be, whatever memory the machine has: a device such as
// /dev/zero, a sparse file or a decompression bomb is refused with an error
// that names the file and the bound, not read until memory runs out.
// Decoding errors of JSON come back in plain words: the file, the line and
// the field at fault, not Go's type names.
package inputfile
