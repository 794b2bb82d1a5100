package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A run killed outright (SIGKILL: no handler runs) leaves its temporary
// file; the next write to that directory removes it, and leaves the
// output the killed run was replacing as it was.
func TestKilledRunsTempIsRemoved(t *testing.T) {
	t.Parallel()
	bin := moebenchBinary(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.bin")
	if err := os.WriteFile(out, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "trace", "gen", "--steps", "400", "--layers", "61", "--ranks", "64", "--out", "out.bin")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".out.bin.moebench-*.tmp"))
		return m
	}
	for deadline := time.Now().Add(10 * time.Second); len(temps()) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	left := temps()
	if len(left) != 1 {
		t.Fatalf("the killed run left %q, want one temporary file", left)
	}
	if !strings.Contains(filepath.Base(left[0]), "-"+strconv.Itoa(cmd.Process.Pid)+"-") {
		t.Errorf("temporary file %s does not carry the PID %d", left[0], cmd.Process.Pid)
	}
	if err := run([]string{"trace", "gen", "--steps", "1", "--layers", "1", "--ranks", "16", "--out", filepath.Join(dir, "next.bin")}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if left := temps(); len(left) != 0 {
		t.Errorf("the next write left %q", left)
	}
	if b, err := os.ReadFile(out); string(b) != "old" {
		t.Errorf("out.bin now %.20q, %v", b, err)
	}
}

// --out writes through a symbolic link, leaving it, and keeps an existing
// file's permissions.
func TestOutKeepsModeAndLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	private := filepath.Join(dir, "private.jsonl")
	target := filepath.Join(dir, "real.jsonl")
	link := filepath.Join(dir, "link.jsonl")
	os.WriteFile(private, []byte("old"), 0o600)
	os.Chmod(private, 0o600)
	os.WriteFile(target, []byte("old"), 0o640)
	os.Chmod(target, 0o640)
	if err := os.Symlink("real.jsonl", link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{private, link} {
		var stderr bytes.Buffer
		if err := run([]string{"trace", "gen", "--steps", "1", "--layers", "1", "--ranks", "16", "--out", path}, io.Discard, &stderr); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	for path, want := range map[string]os.FileMode{private: 0o600, target: 0o640} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want || st.Size() < 100 {
			t.Errorf("%s: %v, %v; want mode %v and the trace", path, st.Mode(), err, want)
		}
	}
	if to, err := os.Readlink(link); err != nil || to != "real.jsonl" {
		t.Errorf("link now %q, %v", to, err)
	}
}
