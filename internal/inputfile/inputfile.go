package inputfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// TooLargeError says an input is larger than its kind can be.
type TooLargeError struct {
	Name  string // the file (or file and member)
	What  string // the kind of input, e.g. "a profile file"
	Limit int64  // bytes
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, the most %s can be", e.Name, Size(e.Limit), e.What)
}

// Size renders a bound in binary units, exactly when it is a whole number
// of them ("64 MiB"), else in bytes.
func Size(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFile reads the file at path whole, refusing it with a
// *TooLargeError once it holds more than limit bytes. A regular file whose
// size is over the limit is refused before it is read; any other (a
// device, a pipe, a file that grows) is read only to the limit. what names
// the kind of input in the error, e.g. "a profile file".
func ReadFile(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hint int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > limit {
			return nil, &TooLargeError{Name: path, What: what, Limit: limit}
		}
		hint = st.Size()
	}
	return readAll(NewReader(f, path, what, limit), hint, limit)
}

// readAll reads r, which stops past limit bytes, to its end into a buffer
// sized for hint bytes, doubling it only as more arrives, so that an input
// of unknown size costs at most twice the limit.
func readAll(r io.Reader, hint, limit int64) ([]byte, error) {
	buf := make([]byte, 0, min(hint, limit)+1)
	for {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(max(2*int64(cap(buf)), 64<<10), limit+1))
			copy(nb, buf)
			buf = nb
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// NewReader returns a reader of r that reads at most limit bytes and then
// fails with a *TooLargeError if r holds more; name and what are for that
// error, as in ReadFile.
func NewReader(r io.Reader, name, what string, limit int64) io.Reader {
	return &limited{r: r, left: limit, err: &TooLargeError{Name: name, What: what, Limit: limit}}
}

type limited struct {
	r    io.Reader
	left int64
	err  *TooLargeError
	over bool
}

func (l *limited) Read(p []byte) (int, error) {
	if l.over {
		return 0, l.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if l.left <= 0 {
		// At the limit: one more byte, if there is one, is one too many.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			l.over = true
			return 0, l.err
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// IsTooLarge reports whether err is, or wraps, a *TooLargeError.
func IsTooLarge(err error) bool {
	var tl *TooLargeError
	return errors.As(err, &tl)
}
