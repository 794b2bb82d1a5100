package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An interrupted command, stopped by a real signal, exits non-zero with a
// one-line message, removes its temporary files and leaves an existing
// --out file as it was.
func TestInterruptLeavesNothing(t *testing.T) {
	t.Parallel()
	bin := moebenchBinary(t)
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		setup  []string // run first, in the case's directory
		args   []string
		inTemp bool // wait for the temporary output file before signalling
	}{
		{name: "trace gen", sig: syscall.SIGINT, inTemp: true,
			args: []string{"trace", "gen", "--steps", "400", "--layers", "61", "--ranks", "64", "--out", "out.bin"}},
		{name: "replay --out", sig: syscall.SIGTERM,
			setup: []string{"trace", "gen", "--ranks", "64", "--tokens", "512", "--layers", "8", "--out", "t.bin"},
			args:  []string{"replay", "--trace", "t.bin", "--transport", "mini-proxy", "--format", "json", "--out", "out.bin"}},
		{name: "run --out", sig: syscall.SIGINT,
			args: []string{"run", "--ranks", "128", "--tokens", "1024", "--transport", "mini-proxy", "--format", "json", "--out", "out.bin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.setup != nil {
				if r := runBinary(t, dir, time.Minute, tc.setup...); r.code != 0 {
					t.Fatalf("setup: %s", r.stderr)
				}
			}
			out := filepath.Join(dir, "out.bin")
			if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := listDir(t, dir)
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for tc.inTemp && time.Now().Before(deadline) && len(listDir(t, dir)) == len(before) {
				time.Sleep(20 * time.Millisecond)
			}
			if tc.inTemp && len(listDir(t, dir)) == len(before) {
				t.Fatal("no temporary file appeared")
			}
			if !tc.inTemp {
				time.Sleep(300 * time.Millisecond) // into the work
			}
			sent := time.Now()
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			if d := time.Since(sent); d > 2*time.Second {
				t.Errorf("stopped %v after the signal", d)
			}
			if code := cmd.ProcessState.ExitCode(); code != 128+int(tc.sig) {
				t.Errorf("exit %d (%v), want %d; stderr:\n%s", code, err, 128+int(tc.sig), stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "moebench: interrupted by SIG") {
				t.Errorf("last stderr line %q", last)
			}
			if after := listDir(t, dir); !slices.Equal(before, after) {
				t.Errorf("files before %v, after %v", before, after)
			}
			if b, _ := os.ReadFile(out); string(b) != "old" {
				t.Errorf("--out changed to %.40q", b)
			}
		})
	}
}
