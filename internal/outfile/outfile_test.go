package outfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"moebench/internal/outfile"
)

// Check refuses an output that is an input or another output by any
// name, and nothing else.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	j := func(s string) string { return filepath.Join(dir, s) }
	os.WriteFile(j("in.json"), []byte("{}"), 0o644)
	os.WriteFile(j("other.json"), []byte("{}"), 0o644)
	os.Link(j("in.json"), j("hard.json"))
	os.Symlink("in.json", j("soft.json"))
	if err := syscall.Mkfifo(j("pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		outs, ins []string
		want      string // the refusal, "" for none
	}{
		{"the input", []string{j("in.json")}, []string{j("in.json")},
			"out " + j("in.json") + " is the input trace " + j("in.json") + ": writing it would destroy the input; name another output file"},
		{"a hard link", []string{j("hard.json")}, []string{j("in.json")},
			"out " + j("hard.json") + " is the input trace " + j("in.json") + ": writing it would destroy the input; name another output file"},
		{"a symbolic link", []string{j("soft.json")}, []string{j("in.json")},
			"out " + j("soft.json") + " is the input trace " + j("in.json") + ": writing it would destroy the input; name another output file"},
		{"dot segments", []string{dir + "/./x/../in.json"}, []string{j("in.json")}, ""}, // x does not exist: not a path to in.json
		{"two outputs", []string{j("new.svg"), dir + "/./new.svg"}, nil,
			"plot " + dir + "/./new.svg is also out: one output would overwrite the other; name another file"},
		{"another file", []string{j("other.json")}, []string{j("in.json")}, ""},
		{"stdout", []string{"-", "-"}, []string{"-"}, ""},
		{"a pipe", []string{j("pipe"), j("pipe")}, []string{j("pipe")}, ""},
	} {
		var outs []outfile.Arg
		for i, p := range tc.outs {
			outs = append(outs, outfile.Arg{Name: []string{"out", "plot"}[i], Path: p})
		}
		err := outfile.Check(outs, outfile.Named("trace", tc.ins))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// An input named by its path alone is named once.
func TestCheckPositional(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "a.json")
	os.WriteFile(in, []byte("{}"), 0o644)
	err := outfile.Check([]outfile.Arg{{Name: "out", Path: in}}, outfile.Positional([]string{in}))
	if want := "out " + in + " is the input " + in + ": writing it would destroy the input; name another output file"; err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// Existing keeps the files, not folders, missing paths or names.
func TestExisting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "p.json")
	os.WriteFile(f, []byte("{}"), 0o644)
	got := outfile.Existing("profile", []string{"p-ib", f, dir, filepath.Join(dir, "none.json")})
	if len(got) != 1 || got[0] != (outfile.Arg{Name: "profile", Path: f}) {
		t.Errorf("Existing = %v, want only %s", got, f)
	}
}

func write(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// A held Set puts its outputs in place on Commit, or leaves every file as
// it was on Discard; an unheld one writes each at once.
func TestSet(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		hold      bool
		commit    bool
		failWrite bool // the second output's writer fails
		wantA     string
		wantB     string
	}{
		{"unheld", false, false, false, "new a", "new b"},
		{"held and committed", true, true, false, "new a", "new b"},
		{"held and discarded", true, false, false, "old a", "old b"},
		{"held, the second fails", true, false, true, "old a", "old b"},
		{"unheld, the second fails", false, false, true, "new a", "old b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			os.WriteFile(a, []byte("old a"), 0o644)
			os.WriteFile(b, []byte("old b"), 0o644)
			var s outfile.Set
			if tc.hold {
				s.Hold()
			}
			if err := s.Write(a, write("new a")); err != nil {
				t.Fatal(err)
			}
			wb := write("new b")
			if tc.failWrite {
				wb = func(io.Writer) error { return errors.New("broken") }
			}
			if err := s.Write(b, wb); (err != nil) != tc.failWrite {
				t.Fatalf("second write: %v", err)
			}
			if tc.commit {
				if err := s.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			s.Discard()
			for path, want := range map[string]string{a: tc.wantA, b: tc.wantB} {
				if got, _ := os.ReadFile(path); string(got) != want {
					t.Errorf("%s = %q, want %q", filepath.Base(path), got, want)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
				t.Errorf("left %v", left)
			}
		})
	}
}

func TestNotWritten(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		outs []outfile.Arg
		want string
	}{
		{"none", nil, ""},
		{"stdout", []outfile.Arg{{Name: "out", Path: "-"}, {Name: "plot"}}, ""},
		{"two files", []outfile.Arg{{Name: "out", Path: "a.json"}, {Name: "plot", Path: "a.svg"}}, "; not written: a.json, a.svg"},
	} {
		s := outfile.Set{Outs: tc.outs}
		if got := s.NotWritten(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Put writes stdout for "" and "-", else the file.
func TestPut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ path, stdout, file string }{
		{"", "x", ""},
		{"-", "x", ""},
		{filepath.Join(dir, "out"), "", "x"},
	} {
		var s outfile.Set
		var b strings.Builder
		if err := s.Put(tc.path, &b, write("x")); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(filepath.Join(dir, "out"))
		if b.String() != tc.stdout || (tc.file != "" && string(got) != tc.file) {
			t.Errorf("%q: stdout %q, file %q", tc.path, b.String(), got)
		}
	}
}
