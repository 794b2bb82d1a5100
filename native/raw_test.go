package native_test

import (
	"os"
	"path/filepath"
	"testing"

	"moebench/native"
)

// A raw measurement past its bound is refused, naming the file and the
// bound; one within it reads back as written.
func TestReadRawBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "raw.json")
	if err := os.WriteFile(small, []byte(`{"gpu":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := native.ReadRaw(small); err != nil || string(data) != `{"gpu":"x"}` {
		t.Errorf("read %q, %v", data, err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, native.MaxRawBytes+1); err != nil { // sparse
		t.Fatal(err)
	}
	want := big + ": larger than 16 MiB, the most a raw measurement can be"
	if _, err := native.ReadRaw(big); err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if _, err := native.ReadRaw(filepath.Join(dir, "none.json")); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}
