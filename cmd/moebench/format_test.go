package main

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	"moebench/results"
)

// An output format is a reporter registered in results and its name in
// formats: this one, registered by the test alone, is reached through
// --format like the built-in ones. Not parallel: it extends formats for
// its own run only.
func TestFormatIsOneReporter(t *testing.T) {
	results.Register("test-runs", func(d results.Document) (results.Reporter, error) {
		return func(w io.Writer) error {
			l, ok := d.(*results.Layer)
			if !ok {
				return fmt.Errorf("not a layer result")
			}
			for _, r := range l.Results {
				if _, err := fmt.Fprintf(w, "%s %s %s\n", l.Header.Command, r.Preset, r.Workload); err != nil {
					return err
				}
			}
			return nil
		}, nil
	})
	saved := formats
	formats = append(slices.Clone(formats), "test-runs")
	defer func() { formats = saved }()
	var out, errb bytes.Buffer
	args := []string{"run", "--format", "test-runs", "--preset", "deepep-v1,uccl-ep", "--tokens", "8", "--ranks", "8", "--workload", "qwen3-235b"}
	if err := run(args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if want := "run deepep-v1 qwen3-235b\nrun uccl-ep qwen3-235b\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
