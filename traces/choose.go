package traces

import (
	"errors"
	"io"
	"math"
	"strings"

	"moebench/budget"
	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/routing"
)

// ChoiceError is a name given to an input that is none of those the input
// takes. Field names the input as a command names its flag, without
// dashes; Want says what it takes ("one of bin, jsonl").
type ChoiceError struct {
	Field, Value, Want string
}

func (e *ChoiceError) Error() string {
	return e.Field + " " + report.Quote(e.Value) + " is not " + e.Want
}

// ErrStdoutBinary refuses the binary form on standard output ("-"),
// which may be a terminal: it goes to a file.
var ErrStdoutBinary = errors.New("standard output takes JSON lines only; the binary form goes to a file")

// ParseFormat is the format named v, one of allowed; field names the
// input that gave it, for the ChoiceError.
func ParseFormat(field, v string, allowed ...Format) (Format, error) {
	names := make([]string, len(allowed))
	for i, f := range allowed {
		if string(f) == v {
			return f, nil
		}
		names[i] = string(f)
	}
	return "", &ChoiceError{Field: field, Value: v, Want: "one of " + strings.Join(names, ", ")}
}

// OutputFormat is the native format to write path in: name ("format"),
// else path's extension (FormatForPath); "-", standard output, takes JSON
// lines, and only them (ErrStdoutBinary).
func OutputFormat(name, path string) (Format, error) {
	f := FormatForPath(path)
	if name != "" {
		var err error
		if f, err = ParseFormat("format", name, FormatBinary, FormatJSONL); err != nil {
			return "", err
		}
	} else if path == "-" {
		f = FormatJSONL
	}
	if path == "-" && f != FormatJSONL {
		return "", ErrStdoutBinary
	}
	return f, nil
}

// ImportFormat is the format ("from") and layout ("layout") an import
// is told, "" for either to be decided from the data.
func ImportFormat(from, layout string) (Format, Layout, error) {
	var f Format
	if from != "" {
		var err error
		if f, err = ParseFormat("from", from, FormatNPY, FormatNPZ, FormatSGLangStatCSV, FormatEPLB, FormatJSONL, FormatBinary); err != nil {
			return "", "", err
		}
	}
	switch l := Layout(layout); l {
	case LayoutAuto, LayersFirst, TokensFirst:
		return f, l, nil
	}
	return "", "", &ChoiceError{Field: "layout", Value: layout, Want: string(LayersFirst) + " or " + string(TokensFirst)}
}

// SpaceError is a trace larger than the space free where it would be
// written: about Bytes in Records records, Free free on Path's
// filesystem.
type SpaceError struct {
	Bytes   int64 // at most math.MaxInt64
	Records float64
	Free    int64
	Path    string
}

func (e *SpaceError) Error() string {
	return "the trace would take about " + report.Bytes(e.Bytes) + ", more than the " + report.Bytes(e.Free) + " free where " + e.Path + " goes"
}

// CheckSpace refuses, before generating anything, a trace in format f
// larger (EncodedSize) than the space free where path goes; where that
// cannot be told (standard output, no statfs) it passes.
func (d GenOptions) CheckSpace(f Format, path string) error {
	bytes, records := d.EncodedSize(f)
	free := budget.FreeBytes(path)
	if free > 0 && bytes > float64(free) {
		b := int64(math.MaxInt64)
		if bytes < math.MaxInt64 {
			b = int64(bytes)
		}
		return &SpaceError{Bytes: b, Records: records, Free: free, Path: path}
	}
	return nil
}

// Resolve checks d as a command gives it, in this order: the drift, the
// routing named spec (routing.Parse, which it sets), the layer
// (CheckLayer), the format to write path in (OutputFormat) and the space
// free there (CheckSpace). It returns the format; every refusal is of
// an input (field errors, ChoiceError, ErrStdoutBinary, SpaceError).
func (d *GenOptions) Resolve(spec, format, path string) (Format, error) {
	if err := field.Float("drift", d.Drift, 0, 1); err != nil {
		return "", err
	}
	r, err := routing.Parse(spec)
	if err != nil {
		return "", field.Errorf("routing", "%v", err)
	}
	d.Routing = r
	if err := d.CheckLayer(); err != nil {
		return "", err
	}
	f, err := OutputFormat(format, path)
	if err != nil {
		return "", err
	}
	return f, d.CheckSpace(f, path)
}

// EncodePath writes src in format f to the file at path (EncodeFile), or
// to stdout where path is "-".
func EncodePath(path string, f Format, src Reader, stdout io.Writer) error {
	if path == "-" {
		return Encode(stdout, f, src)
	}
	return EncodeFile(path, f, src)
}
