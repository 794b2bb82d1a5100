package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
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
	if err == nil || !strings.Contains(err.Error(), missing) || strings.Contains(err.Error(), tempMark) {
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

// An existing file keeps its permission bits; a new one is 0644.
func TestWriteFileAtomicKeepsMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		old  os.FileMode // 0: no file before
		want os.FileMode
	}{{"private.json", 0o600, 0o600}, {"exec.sh", 0o755, 0o755}, {"new.json", 0, 0o644}} {
		path := filepath.Join(dir, tc.name)
		if tc.old != 0 {
			if err := os.WriteFile(path, []byte("old"), tc.old); err != nil {
				t.Fatal(err)
			}
			os.Chmod(path, tc.old) // whatever the umask
		}
		if err := WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != tc.want {
			t.Errorf("%s: mode %v, %v; want %v", tc.name, st.Mode().Perm(), err, tc.want)
		}
	}
}

// A symbolic link stays a link; its target gets the content, beside it.
func TestWriteFileAtomicThroughLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	target := filepath.Join(sub, "real.json")
	os.WriteFile(target, []byte("old"), 0o600)
	for _, tc := range []struct{ link, to, target string }{
		{"link.json", "sub/real.json", target},                            // relative
		{"abs.json", target, target},                                      // absolute
		{"chain.json", "link.json", target},                               // a link to a link
		{"dangling.json", "sub/new.json", filepath.Join(sub, "new.json")}, // created
	} {
		link := filepath.Join(dir, tc.link)
		if err := os.Symlink(tc.to, link); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(link, func(w io.Writer) error { _, err := io.WriteString(w, tc.link); return err }); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(link); err != nil || got != tc.to {
			t.Errorf("%s: link now %q, %v; want it left pointing at %q", tc.link, got, err, tc.to)
		}
		if b, _ := os.ReadFile(tc.target); string(b) != tc.link {
			t.Errorf("%s: target holds %q", tc.link, b)
		}
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o600 {
		t.Errorf("target's mode %v, want 0600 kept", st.Mode().Perm())
	}
	if ents, _ := os.ReadDir(sub); len(ents) != 2 {
		t.Errorf("sub holds %d entries, want real.json and new.json only", len(ents))
	}
}

// A prepared file changes nothing until committed; discarded, it leaves
// nothing behind.
func TestPrepareCommitDiscard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	os.WriteFile(a, []byte("old"), 0o644)
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	pa, err := Prepare(a, write("new a"))
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Prepare(b, write("new b"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a); string(got) != "old" {
		t.Fatalf("a changed before Commit: %q", got)
	}
	pa.Discard()
	if err := pb.Commit(); err != nil {
		t.Fatal(err)
	}
	pa.Discard()
	if err := pb.Commit(); err != nil {
		t.Fatalf("a second Commit: %v", err)
	}
	if got, _ := os.ReadFile(a); string(got) != "old" {
		t.Errorf("a discarded, now %q", got)
	}
	if got, _ := os.ReadFile(b); string(got) != "new b" {
		t.Errorf("b committed, now %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d entries, want a.json and b.json", len(ents))
	}
}

// A failed rename names the destination, not the temporary file.
func TestCommitNamesThePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	p, err := Prepare(path, func(io.Writer) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// A directory in the way since Prepare: rename cannot replace it.
	os.MkdirAll(filepath.Join(path, "x"), 0o755)
	err = p.Commit()
	if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), tempMark) {
		t.Fatalf("error %v, want it to name %s and not the temporary file", err, path)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries, want the directory only", len(ents))
	}
}

// Writes remove the temporary files of killed runs on this host, and no
// other file.
func TestWriteRemovesStaleTemps(t *testing.T) {
	t.Parallel()
	if host() == "" {
		t.Skip("no host name: nothing is taken for stale")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip("no process to see die:", err)
	}
	deadPID := dead.ProcessState.Pid()
	live := os.Getppid()
	name := func(base, h string, pid int) string {
		return fmt.Sprintf(".%s%s%s-%d-12345%s", base, tempMark, h, pid, tempSuffix)
	}
	dir := t.TempDir()
	stale := name("t.bin", host(), deadPID)
	keep := []string{
		name("t.bin", host(), live),                                 // its process runs
		name("t.bin", host(), os.Getpid()),                          // this process's own
		name("t.bin", "other-"+host(), deadPID),                     // another host's
		".t.bin.tmp-123",                                            // not this program's pattern
		fmt.Sprintf(".t.bin%s%s-%d.tmp", tempMark, host(), deadPID), // no random part
		"t.bin",
	}
	for _, n := range append([]string{stale}, keep...) {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	os.Mkdir(filepath.Join(dir, name("d", host(), deadPID)), 0o755) // not a file
	keep = append(keep, name("d", host(), deadPID))
	if err := WriteFileAtomic(filepath.Join(dir, "other.json"), func(io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, stale)); !os.IsNotExist(err) {
		t.Errorf("stale %s left: %v", stale, err)
	}
	for _, n := range keep {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
}

// The names removeStale takes are those tempPattern makes.
func TestTempPatternIsStale(t *testing.T) {
	t.Parallel()
	if host() == "" {
		t.Skip("no host name")
	}
	for _, dest := range []string{"t.bin", "a b*.json", strings.Repeat("é", 200) + ".svg"} {
		f, err := os.CreateTemp(t.TempDir(), tempPattern(dest))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if pid, ok := stalePID(filepath.Base(f.Name())); !ok || pid != os.Getpid() {
			t.Errorf("%s: stalePID(%s) = %d, %v", dest, filepath.Base(f.Name()), pid, ok)
		}
	}
}

func TestSameFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	os.WriteFile(in, []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.json"), []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Link(in, filepath.Join(dir, "hard.json"))
	os.Symlink("in.json", filepath.Join(dir, "soft.json"))
	os.Symlink("new.json", filepath.Join(dir, "dangling.json"))
	j := func(s string) string { return filepath.Join(dir, s) }
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{j("in.json"), j("in.json"), true},
		{j("in.json"), dir + "/./sub/../in.json", true},
		{j("in.json"), j("hard.json"), true},
		{j("soft.json"), j("in.json"), true},
		{j("dangling.json"), j("new.json"), true},
		{j("new.json"), dir + "/./sub/../new.json", true},
		{j("in.json"), j("other.json"), false},
		{j("in.json"), j("new.json"), false},
		{j("new.json"), j("newer.json"), false},
	} {
		if got := SameFile(tc.a, tc.b); got != tc.want {
			t.Errorf("SameFile(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// A writer's error keeps what it says about other files, and names the
// destination where it names the temporary file.
func TestWriteFileAtomicWriterErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	_, inputErr := os.Open(filepath.Join(dir, "input.bin"))
	err := WriteFileAtomic(path, func(io.Writer) error { return fmt.Errorf("reading: %w", inputErr) })
	if err == nil || !strings.Contains(err.Error(), "input.bin") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an input's error became %v", err)
	}
	err = WriteFileAtomic(path, func(w io.Writer) error {
		return fmt.Errorf("encode: %w", &os.PathError{Op: "write", Path: w.(*os.File).Name(), Err: errors.ErrUnsupported})
	})
	if err == nil || !strings.Contains(err.Error(), "encode: write "+path) || strings.Contains(err.Error(), tempMark) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("the temporary file's error became %v", err)
	}
}
