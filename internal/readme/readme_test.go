package readme

import (
	"os"
	"path/filepath"
	"testing"
)

type recorder struct {
	testing.TB
	errs int
}

func (r *recorder) Errorf(string, ...any) { r.errs++ }
func (r *recorder) Helper()               {}

func TestSays(t *testing.T) {
	p := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(p, []byte("a warp is 64\nbytes,   one line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Says(r, p, "a warp is 64 bytes, one line")
	if r.errs != 0 {
		t.Errorf("a claim across a line break was not found")
	}
	Says(r, p, "a warp is 72 bytes", "one line")
	if r.errs != 1 {
		t.Errorf("%d errors for one missing claim, want 1", r.errs)
	}
}
