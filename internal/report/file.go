package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
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

// CheckWritable reports, before any work, whether path can be written: it
// is not a directory and its directory exists and takes a new file. It
// probes with a temporary file that it removes.
func CheckWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: directory %s does not exist", path, filepath.Dir(path))
	}
	temps.Lock()
	defer temps.Unlock()
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".probe-*")
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
	return err
}

// WriteFileAtomic writes path through a temporary file in the same directory
// and renames it into place only when write succeeded, so readers never see
// a partial file and a failed or interrupted run leaves the old file (or
// none) behind. Errors name path, not the temporary file.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	temps.Lock()
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err == nil {
		if temps.paths == nil {
			temps.paths = map[string]bool{}
		}
		temps.paths[f.Name()] = true
	}
	temps.Unlock()
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, userPath(err, path))
	}
	tmp := f.Name()
	defer func() {
		temps.Lock()
		defer temps.Unlock()
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
		delete(temps.paths, tmp)
	}()
	fail := func(e error) error { return fmt.Errorf("writing %s: %w", path, userPath(e, path)) }
	if err = write(f); err != nil {
		return fail(err)
	}
	if err = f.Sync(); err != nil {
		return fail(err)
	}
	if err = f.Close(); err != nil {
		return fail(err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fail(err)
	}
	temps.Lock()
	if temps.paths == nil || !temps.paths[tmp] { // interrupted: RemoveTemps took it
		temps.Unlock()
		return fail(errors.New("interrupted"))
	}
	err = os.Rename(tmp, path)
	temps.Unlock()
	if err != nil {
		return fail(err)
	}
	return nil
}
