package profile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profile file's base: a built-in name, or a path beside the file
// wherever moebench runs; a loop or a missing base is the file's fault,
// told once.
func TestLoadBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sub/gpu.json", `{"name": "gpu", "base": "p-ib", "constants": [{"name": "gpu.sm_clock_mhz", "value": 1500, "source": "test"}]}`)
	write("sub/cal.json", `{"name": "cal", "base": "gpu.json"}`)
	write("sub/deep/cal.json", `{"name": "deep", "base": "../gpu.json"}`)
	write("sub/self.json", `{"name": "self", "base": "self.json"}`)
	write("sub/a.json", `{"name": "a", "base": "b.json"}`)
	write("sub/b.json", `{"name": "b", "base": "a.json"}`)
	write("sub/missing.json", `{"name": "m", "base": "nope.json"}`)
	write("sub/unknown.json", `{"name": "u", "base": "p-xyz"}`)
	for _, c := range []struct {
		name, spec string
		want       string // error text, "" for none
		usage      bool   // the error is ErrUnknownName
	}{
		{"relative base beside the file", filepath.Join(dir, "sub/cal.json"), "", false},
		{"relative base up a folder", filepath.Join(dir, "sub/deep/cal.json"), "", false},
		{"self base", filepath.Join(dir, "sub/self.json"), "its chain of bases loops: " + filepath.Join(dir, "sub/self.json") + " → " + filepath.Join(dir, "sub/self.json"), false},
		{"loop of two", filepath.Join(dir, "sub/a.json"), "loops: " + filepath.Join(dir, "sub/a.json") + " → " + filepath.Join(dir, "sub/b.json") + " → " + filepath.Join(dir, "sub/a.json"), false},
		{"missing base", filepath.Join(dir, "sub/missing.json"), filepath.Join(dir, "sub/nope.json"), false},
		{"unknown built-in base", filepath.Join(dir, "sub/unknown.json"), `"p-xyz": no such built-in profile`, false},
		{"unknown built-in name", "p-xyz", `"p-xyz": no such built-in profile`, true},
		{"empty entry", "p-ib,", "no such built-in profile", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := Load(c.spec)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if v := p.Get("gpu.sm_clock_mhz"); v != 1500 {
					t.Errorf("gpu.sm_clock_mhz = %v, want the base file's 1500", v)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to name %q", err, c.want)
			}
			if n := strings.Count(err.Error(), "base chain") + strings.Count(err.Error(), "chain of bases"); n > 1 {
				t.Errorf("the chain is told %d times: %v", n, err)
			}
			if errors.Is(err, ErrUnknownName) != c.usage {
				t.Errorf("errors.Is(%v, ErrUnknownName) = %v, want %v", err, !c.usage, c.usage)
			}
		})
	}
}

func TestLoadFileBounded(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(p, []byte(`{"name": "`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 1<<30); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{p, "/dev/zero"} {
		if _, err := Load(spec); err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") || errors.Is(err, ErrUnknownName) {
			t.Errorf("Load(%s): %v, want a file error naming the 16 MiB bound", spec, err)
		}
	}
}
