package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// stripHeader drops the "# " header lines, which name the host.
func stripHeader(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "# ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it after review):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// The model is deterministic: its tables must not drift unless a change
// means them to.
func TestGoldenOutputs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run_default.txt", []string{"run"}},
		{"run_decode_background.txt", []string{"run", "--tokens", "4", "--transport", "mini-gda,mini-proxy", "--background", "bulk:16:shared"}},
		// One node keeps the one-hop intranode model; two nodes run the
		// two-hop internode kernels.
		{"run_normal_one_node.txt", []string{"run", "--mode", "normal", "--ranks", "8", "--topk-groups", "0"}},
		{"run_normal_two_nodes.txt", []string{"run", "--mode", "normal", "--tokens", "512", "--format", "csv"}},
		{"validate_foundation.csv", []string{"validate", "--only", "single-op,ordering,inline,rate,completion-scope", "--format", "csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if raceOn && tc.name == "run_decode_background.txt" {
				t.Skip("the slowest golden under the race detector, with nothing concurrent the others lack")
			}
			out, _, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, stripHeader(out))
		})
	}
}
