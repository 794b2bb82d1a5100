package traces

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format names an on-disk form.
type Format string

// Native formats (read and written) and importable ones (read by Import).
const (
	FormatBinary        Format = "bin"
	FormatJSONL         Format = "jsonl"
	FormatNPY           Format = "npy"
	FormatNPZ           Format = "npz"
	FormatSGLangStatCSV Format = "sglang-stat-csv"
	FormatEPLB          Format = "eplb"
)

// NewWriter returns a writer for a native format.
func NewWriter(w io.Writer, f Format, h Header) (Writer, error) {
	switch f {
	case FormatBinary:
		return NewBinaryWriter(w, h)
	case FormatJSONL:
		return NewJSONLWriter(w, h)
	}
	return nil, fmt.Errorf("format %q cannot be written (want %q or %q)", f, FormatBinary, FormatJSONL)
}

// FormatForPath guesses a native format from a file name: .jsonl and .json
// are JSON lines, everything else binary.
func FormatForPath(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".json", ".ndjson":
		return FormatJSONL
	}
	return FormatBinary
}

// Sniff names the format of data from its first bytes, with the file name's
// extension as a hint where the bytes cannot decide (CSV). It returns ""
// when neither does.
func Sniff(head []byte, name string) Format {
	switch {
	case bytes.HasPrefix(head, []byte(binaryMagic)):
		return FormatBinary
	case bytes.HasPrefix(head, []byte(npyMagic)):
		return FormatNPY
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return FormatNPZ
	}
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(t) > 0 && t[0] == '{' {
		return FormatJSONL
	}
	ext := strings.ToLower(filepath.Ext(name))
	if ext == ".csv" || ext == ".txt" {
		if bytes.HasPrefix(t, []byte("layer_id")) {
			return FormatSGLangStatCSV
		}
		return ""
	}
	switch ext {
	case ".bin", ".moetrace":
		return FormatBinary
	case ".jsonl", ".ndjson":
		return FormatJSONL
	case ".npy":
		return FormatNPY
	case ".npz":
		return FormatNPZ
	}
	return ""
}

// NewReader detects a native format from the first bytes of r and returns
// a reader for it. name is used in error messages.
func NewReader(r io.Reader, name string) (Reader, error) {
	br := bufio.NewReaderSize(r, bufferedIOBytes)
	head, _ := br.Peek(64)
	switch f := Sniff(head, name); f {
	case FormatBinary:
		return NewBinaryReader(br, name)
	case FormatJSONL:
		return NewJSONLReader(br, name)
	case "":
		return nil, fmt.Errorf("%s: not a moebench trace (neither binary nor JSON lines)", name)
	default:
		return nil, fmt.Errorf("%s: this is %s input, not a moebench trace; convert it first with: moebench trace convert %s --out TRACE", name, f, name)
	}
}

type fileReader struct {
	Reader
	f *os.File
}

func (fr fileReader) Close() error { return fr.f.Close() }

// Open opens a native trace file (binary or JSON lines, told apart by their
// first bytes). The file is streamed, never loaded whole; close it when done.
func Open(path string) (ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return fileReader{Reader: r, f: f}, nil
}
