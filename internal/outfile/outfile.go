package outfile

import (
	"fmt"
	"io"
	"os"
	"strings"

	"moebench/internal/report"
)

// Arg is a file a command line names: Name is how the command names it
// (a flag, or for a positional argument its path) and Path where it is.
// "" and "-" (stdout) name no file.
type Arg struct{ Name, Path string }

// IsFile reports whether a names a file rather than stdout or nothing.
func (a Arg) IsFile() bool { return a.Path != "" && a.Path != "-" }

// Check refuses an output that is one of the inputs (writing it would
// destroy what is being read) or another of the outputs (one would
// overwrite the other): the same path, or the same file through a link,
// symbolic or hard.
func Check(outs, ins []Arg) error {
	for i, o := range outs {
		if !o.IsFile() || !replaced(o.Path) {
			continue
		}
		for _, in := range ins {
			if in.IsFile() && report.SameFile(o.Path, in.Path) {
				return fmt.Errorf("%s %s is the input %s: writing it would destroy the input; name another output file",
					o.Name, o.Path, inputName(in))
			}
		}
		for _, prev := range outs[:i] {
			if prev.IsFile() && report.SameFile(o.Path, prev.Path) {
				return fmt.Errorf("%s %s is also %s: one output would overwrite the other; name another file",
					o.Name, o.Path, prev.Name)
			}
		}
	}
	return nil
}

// replaced reports whether writing path replaces a file: not so for a
// device or a pipe (/dev/null, /dev/stdout), written in place.
func replaced(path string) bool {
	st, err := os.Stat(path)
	return err != nil || st.Mode().IsRegular()
}

// inputName names an input in a refusal: its name and path, or the path
// alone where the name is the path (a positional argument).
func inputName(in Arg) string {
	if in.Name == "" || in.Name == in.Path {
		return in.Path
	}
	return in.Name + " " + in.Path
}

// Named are paths all named name (a list flag's entries).
func Named(name string, paths []string) []Arg {
	var out []Arg
	for _, p := range paths {
		out = append(out, Arg{name, p})
	}
	return out
}

// Positional are positional arguments, each named by its path.
func Positional(paths []string) []Arg {
	var out []Arg
	for _, p := range paths {
		out = append(out, Arg{p, p})
	}
	return out
}

// Existing are those of paths that are files, named name: the entries of
// a list that mixes files with built-in names.
func Existing(name string, paths []string) []Arg {
	var out []Arg
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			out = append(out, Arg{name, p})
		}
	}
	return out
}

// Set is a command's outputs. Outs are the files it writes, kept to check
// inputs found later against them and to list in NotWritten. The zero Set writes each output as it comes.
type Set struct {
	Outs []Arg
	// While holding, outputs wait in pending for Commit (see Hold).
	holding bool
	pending []*report.Pending
}

// Hold makes the outputs written from now on wait for Commit: a command
// with several outputs puts them in place together, once every one is
// written and nothing can fail any more, so that a command that fails
// writes no file. Defer Discard right after Hold.
func (s *Set) Hold() { s.holding = true }

// Write writes path atomically, or prepares it for Commit while held.
func (s *Set) Write(path string, write func(io.Writer) error) error {
	if !s.holding {
		return report.WriteFileAtomic(path, write)
	}
	p, err := report.Prepare(path, write)
	if err != nil {
		return err
	}
	s.pending = append(s.pending, p)
	return nil
}

// Put writes to stdout where path names no file ("" or "-"), else to
// path as Write does.
func (s *Set) Put(path string, stdout io.Writer, write func(io.Writer) error) error {
	if !(Arg{Path: path}).IsFile() {
		return write(stdout)
	}
	return s.Write(path, write)
}

// Commit puts every held output in place.
func (s *Set) Commit() error {
	s.holding = false
	defer s.Discard()
	for _, p := range s.pending {
		if err := p.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Discard removes the held outputs not yet committed; their files stay as
// they were.
func (s *Set) Discard() {
	for _, p := range s.pending {
		p.Discard()
	}
	s.pending = nil
}

// NotWritten ends the message of a failure found after the work: the
// files the command was to write are not written (or left as they were);
// "" when it writes none.
func (s *Set) NotWritten() string {
	var names []string
	for _, o := range s.Outs {
		if o.IsFile() {
			names = append(names, o.Path)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; not written: " + strings.Join(names, ", ")
}
