package traces

import (
	"errors"
	"io"

	"moebench/internal/report"
)

// SourceError is a read error of the source Encode reads: the input's
// fault, not the output's.
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// Encode writes every record of src to w in format f, with src's header,
// and closes the trace writer. A read error comes back as a *SourceError.
func Encode(w io.Writer, f Format, src Reader) error {
	tw, err := NewWriter(w, f, src.Header())
	if err != nil {
		return err
	}
	for {
		rec, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return &SourceError{Err: err}
		}
		if err := tw.Write(rec); err != nil {
			return err
		}
	}
	return tw.Close()
}

// EncodedSize estimates the bytes of the trace d generates in format f,
// and its records: ids take 4 bytes each in the binary form (8 with
// weights) and about 4 characters in JSON lines, and each record 32 more.
func (d GenOptions) EncodedSize(f Format) (bytes, records float64) {
	per := 4.0
	if d.Weights {
		per = 8
	}
	if f == FormatJSONL {
		per *= 2
	}
	records = float64(d.Steps) * float64(d.Layers) * float64(d.Ranks)
	return records * (float64(d.TokensPerRank)*float64(d.TopK)*per + 32), records
}

// EncodeFile writes src to the file at path in format f atomically (a
// failure leaves no file and an existing one as it was). A read error of
// src is the input's fault: it comes back as it is, naming the input,
// not as the file's "writing PATH".
func EncodeFile(path string, f Format, src Reader) error {
	err := report.WriteFileAtomic(path, func(w io.Writer) error { return Encode(w, f, src) })
	if se := (*SourceError)(nil); errors.As(err, &se) {
		return se.Err
	}
	return err
}
