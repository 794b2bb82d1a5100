package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// temps are the temporary files being written, so that an interrupt can
// remove them (RemoveTemps). The lock is held while one is created or
// renamed into place, never while it is written.
var temps struct {
	sync.Mutex
	paths map[string]bool
}

// RemoveTemps removes every temporary file WriteFileAtomic has in flight
// and stops any from being created or renamed into place afterwards: the
// process is about to exit on a signal. It returns how many it removed.
func RemoveTemps() int {
	temps.Lock() // held to the end of the process
	n := 0
	for p := range temps.paths {
		if os.Remove(p) == nil {
			n++
		}
	}
	temps.paths = nil
	return n
}

// Temporary files are named ".BASE.moebench-HOST-PID-RANDOM.tmp" beside
// their destination: recognisably this program's, and with the host and
// process that wrote them, so that a later write to the directory can
// remove those a killed process left (removeStale) and no others. The
// host keeps a run from taking a live process on another machine that
// shares the directory for a dead one here.
const (
	tempMark   = ".moebench-"
	tempSuffix = ".tmp"
	// tempBaseMax bytes of the destination's name go into the temporary
	// one, so that a long name still leaves room for the rest.
	tempBaseMax = 100
)

var (
	hostOnce sync.Once
	hostTag  string // "" when the host is unknown: then nothing is removed
)

func host() string {
	hostOnce.Do(func() {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return
		}
		hostTag = strings.Map(func(r rune) rune {
			if r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return '_'
		}, h)
	})
	return hostTag
}

// tempPattern is the os.CreateTemp pattern of a temporary file for dest.
func tempPattern(dest string) string {
	base := filepath.Base(dest)
	if len(base) > tempBaseMax {
		cut := tempBaseMax
		for cut > 0 && !utf8.RuneStart(base[cut]) {
			cut--
		}
		base = base[:cut]
	}
	h := host()
	if h == "" {
		h = "unknown"
	}
	return "." + strings.ReplaceAll(base, "*", "_") + tempMark + h + "-" + strconv.Itoa(os.Getpid()) + "-*" + tempSuffix
}

// stalePID returns the PID in name when name is a temporary file of this
// program written on this host, and ok false for any other name.
func stalePID(name string) (pid int, ok bool) {
	h := host()
	if h == "" || !strings.HasPrefix(name, ".") || !strings.HasSuffix(name, tempSuffix) {
		return 0, false
	}
	m := staleName(h).FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

var (
	staleOnce sync.Once
	staleRE   *regexp.Regexp
)

func staleName(h string) *regexp.Regexp {
	staleOnce.Do(func() {
		staleRE = regexp.MustCompile(`^\..+` + regexp.QuoteMeta(tempMark+h) + `-([0-9]{1,9})-[0-9]+` + regexp.QuoteMeta(tempSuffix) + `$`)
	})
	return staleRE
}

// removeStale removes from dir the temporary files of this program that a
// process on this host left when it was killed: only regular files named
// as tempPattern names them, only of processes that no longer exist, never
// this process's own. It returns how many it removed.
func removeStale(dir string) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, ok := stalePID(e.Name())
		if !ok || pid == os.Getpid() || !e.Type().IsRegular() || !processGone(pid) {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

// resolve follows path to the file a write to it changes: a symbolic
// link's target, however many links deep, written beside that target so
// that the link stays in place. A target that does not exist yet is
// where the file will be created.
func resolve(path string) (string, error) {
	p := path
	for range 40 {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(dir, filepath.Base(p))
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", userPath(err, path)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// SameFile reports whether paths a and b name one file: the same file
// when both exist (through links, hard or symbolic, too), otherwise the
// same path once links and "." and ".." are resolved.
func SameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	if errA == nil || errB == nil {
		return false
	}
	ra, errA := resolve(a)
	rb, errB := resolve(b)
	if errA != nil || errB != nil {
		return false
	}
	ra, errA = filepath.Abs(ra)
	rb, errB = filepath.Abs(rb)
	return errA == nil && errB == nil && ra == rb
}

// CheckWritable reports, before any work, whether path can be written: it
// (or, for a link, its target) is not a directory and its directory exists
// and takes a new file. It probes with a temporary file that it removes.
func CheckWritable(path string) error {
	dest, err := resolve(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(dest)
	if err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	if err == nil && !st.Mode().IsRegular() {
		return nil // a device or a pipe, written in place (see Prepare)
	}
	dir := filepath.Dir(dest)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: directory %s does not exist", path, dir)
	}
	temps.Lock()
	defer temps.Unlock()
	f, err := os.CreateTemp(dir, tempPattern(dest))
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, errors.Unwrap(userPath(err, path)))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// userPath rewrites a path error about the temporary file to name the
// user's path; the temporary name means nothing to them.
func userPath(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return &fs.PathError{Op: le.Op, Path: path, Err: le.Err}
	}
	return err
}

// renamed is err with the temporary file's name tmp replaced by path in
// its message; errors.Is and As still see err.
func renamed(err error, tmp, path string) error {
	if !strings.Contains(err.Error(), tmp) {
		return err
	}
	return &renamedError{msg: strings.ReplaceAll(err.Error(), tmp, path), err: err}
}

type renamedError struct {
	msg string
	err error
}

func (e *renamedError) Error() string { return e.msg }
func (e *renamedError) Unwrap() error { return e.err }

// Pending is an output written in full to a temporary file beside its
// destination and not yet in place: Commit renames it there, Discard
// removes it. A command that writes several files prepares every one
// before it commits any, so that a failure leaves all of them as they
// were.
type Pending struct {
	path string // as the caller named it, for messages
	dest string // path, or the target of the link path is
	tmp  string // "" once committed or discarded, or when written in place
}

// Prepare writes path's new content to a temporary file. An existing file
// keeps its permission bits (a new one gets 0644); a symbolic link keeps
// pointing where it did, and its target gets the content. A device or a
// pipe (/dev/null, a FIFO) is written in place at once: it cannot be
// replaced, nor its output taken back. Errors name path, never the
// temporary file. Prepare also removes the temporary files that killed
// runs left in the directory (see removeStale).
func Prepare(path string, write func(io.Writer) error) (_ *Pending, err error) {
	fail := func(e error) error { return fmt.Errorf("writing %s: %w", path, userPath(e, path)) }
	dest, err := resolve(path)
	if err != nil {
		return nil, fail(err)
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(dest); err == nil {
		switch {
		case st.IsDir():
			return nil, fail(errors.New("is a directory"))
		case !st.Mode().IsRegular():
			return &Pending{path: path, dest: dest}, writeInPlace(dest, path, write)
		}
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(dest)
	removeStale(dir)
	temps.Lock()
	f, err := os.CreateTemp(dir, tempPattern(dest))
	if err == nil {
		if temps.paths == nil {
			temps.paths = map[string]bool{}
		}
		temps.paths[f.Name()] = true
	}
	temps.Unlock()
	if err != nil {
		return nil, fail(err)
	}
	p := &Pending{path: path, dest: dest, tmp: f.Name()}
	defer func() {
		if err != nil {
			f.Close()
			p.Discard()
		}
	}()
	if err = write(f); err != nil {
		// The writer's own error may be about an input: only the
		// temporary file's name is replaced.
		return nil, fmt.Errorf("writing %s: %w", path, renamed(err, p.tmp, path))
	}
	if err = f.Sync(); err != nil {
		return nil, fail(err)
	}
	if err = f.Close(); err != nil {
		return nil, fail(err)
	}
	if err = os.Chmod(p.tmp, mode); err != nil {
		return nil, fail(err)
	}
	return p, nil
}

// writeInPlace writes a destination that is not a regular file.
func writeInPlace(dest, path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(dest, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, userPath(err, path))
	}
	err = write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = userPath(cerr, path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Path is the destination as the caller named it.
func (p *Pending) Path() string { return p.path }

// Commit renames the temporary file into place.
func (p *Pending) Commit() error {
	temps.Lock()
	defer temps.Unlock()
	if p.tmp == "" {
		return nil
	}
	tmp := p.tmp
	p.tmp = ""
	if temps.paths == nil || !temps.paths[tmp] { // interrupted: RemoveTemps took it
		return fmt.Errorf("writing %s: interrupted", p.path)
	}
	delete(temps.paths, tmp)
	if err := os.Rename(tmp, p.dest); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", p.path, userPath(err, p.path))
	}
	return nil
}

// Discard removes the temporary file; the destination stays as it was.
// It does nothing after Commit.
func (p *Pending) Discard() {
	temps.Lock()
	defer temps.Unlock()
	if p.tmp == "" {
		return
	}
	os.Remove(p.tmp)
	delete(temps.paths, p.tmp)
	p.tmp = ""
}

// WriteFileAtomic writes path through a temporary file in the same directory
// and renames it into place only when write succeeded, so readers never see
// a partial file and a failed or interrupted run leaves the old file (or
// none) behind. See Prepare for modes, links and devices.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	p, err := Prepare(path, write)
	if err != nil {
		return err
	}
	return p.Commit()
}
