package results

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"moebench/internal/report"
)

// A Document is a result ready to render; its header says what produced
// it.
type Document interface {
	Head() report.Header
}

// A Reporter writes one document in one format.
type Reporter func(io.Writer) error

// A Format makes the reporter of its format for d; an error wrapping
// ErrUnsupported when d has no rendering in it.
type Format func(d Document) (Reporter, error)

// ErrUnsupported is a format asked of a document it cannot render.
var ErrUnsupported = errors.New("not a format of this result")

var (
	formatsMu sync.RWMutex
	formats   = map[string]Format{}
)

// Register makes a format available by name. It panics when the name is
// taken: formats register once, from init.
func Register(name string, f Format) {
	formatsMu.Lock()
	defer formatsMu.Unlock()
	if _, dup := formats[name]; dup {
		panic("results: format " + name + " registered twice")
	}
	formats[name] = f
}

// Formats lists the registered formats' names, sorted.
func Formats() []string {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	var n []string
	for k := range formats {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// NewReporter is the reporter of the format named for d.
func NewReporter(format string, d Document) (Reporter, error) {
	formatsMu.RLock()
	f, ok := formats[format]
	formatsMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("format %s: %w", report.Quote(format), ErrUnsupported)
	}
	r, err := f(d)
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", format, err)
	}
	return r, nil
}

// Render writes d to w in the format named.
func Render(w io.Writer, format string, d Document) error {
	r, err := NewReporter(format, d)
	if err != nil {
		return err
	}
	return r(w)
}

// unsupported is the error of a format d has no rendering in.
func unsupported(d Document) error {
	return fmt.Errorf("a %s result: %w", d.Head().Command, ErrUnsupported)
}
