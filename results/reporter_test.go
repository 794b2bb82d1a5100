package results_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"moebench/internal/report"
	"moebench/results"
)

// countReporter is a format only this test registers: a document's
// command and, for a layer run, how many runs it holds.
func countReporter(d results.Document) (results.Reporter, error) {
	return func(w io.Writer) error {
		n := -1
		if l, ok := d.(*results.Layer); ok {
			n = len(l.Results)
		}
		_, err := fmt.Fprintf(w, "%s %d\n", d.Head().Command, n)
		return err
	}, nil
}

func init() { results.Register("test-count", countReporter) }

func TestRegistry(t *testing.T) {
	t.Parallel()
	layer := &results.Layer{Header: report.Header{Command: "sweep"}, Results: make([]results.Run, 3)}
	for _, tc := range []struct {
		name, format string
		doc          results.Document
		want         string // output, or "" when the format is refused
	}{
		{"a registered format", "test-count", layer, "sweep 3\n"},
		{"on another document", "test-count", &results.Size{Header: report.Header{Command: "size"}}, "size -1\n"},
		{"no such format", "yaml", layer, ""},
		{"a format the document has no rendering in", "html", layer, ""},
		{"the page is not a table", "table", &results.Page{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			err := results.Render(&b, tc.format, tc.doc)
			if tc.want == "" {
				if !errors.Is(err, results.ErrUnsupported) {
					t.Fatalf("error %v, want one wrapping ErrUnsupported", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// Every format the commands name is registered, and the test's own.
func TestFormats(t *testing.T) {
	t.Parallel()
	got := results.Formats()
	for _, want := range []string{"csv", "html", "json", "png", "svg", "table", "test-count"} {
		if !slices.Contains(got, want) {
			t.Errorf("formats %v lack %s", got, want)
		}
	}
}

// A name registers once.
func TestRegisterTwicePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("a second registration of a name did not panic")
		}
	}()
	results.Register("test-count", countReporter)
}
