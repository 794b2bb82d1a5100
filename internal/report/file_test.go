package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileAtomicLeavesNothingOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	err := WriteFileAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("want error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Fatalf("left %d files behind: %v", len(ents), ents[0].Name())
	}
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "out.txt")
	os.WriteFile(path, []byte("old"), 0o644)
	if err := WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "new" {
		t.Fatalf("got %q", b)
	}
}

// Errors name the user's path, never the temporary file.
func TestWriteFileAtomicNamesThePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	err := WriteFileAtomic(path, func(w io.Writer) error {
		return w.(*os.File).Chmod(0o644) // a PathError about the temp file would name it
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no", "such", "out.json")
	err = WriteFileAtomic(missing, func(io.Writer) error { return nil })
	if err == nil || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("error %v, want it to name %s and not the temporary file", err, missing)
	}
}

func TestCheckWritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "ok.json")); err != nil {
		t.Errorf("writable: %v", err)
	}
	if err := CheckWritable(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if err := CheckWritable(filepath.Join(dir, "no", "x.json")); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "no", "x.json")) {
		t.Errorf("a missing directory: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the probe left %v", ents)
	}
}
