package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"moebench/internal/report"
	"moebench/profile"
)

// formats are the --format names of the result commands, each a
// reporter's in results: a new output format is its file there and its
// name here.
var formats = []string{"table", "json", "csv"}

// checkFormat validates a --format value.
func checkFormat(f string) error {
	if slices.Contains(formats, f) {
		return nil
	}
	return fmt.Errorf("--format %s: want one of %s", report.Quote(f), strings.Join(formats, ", "))
}

// fileArg is a file the command line names: the flag or argument that
// names it, and its path. "" and "-" (stdout) name no file.
type fileArg struct{ name, path string }

func (f fileArg) isFile() bool { return f.path != "" && f.path != "-" }

// checkFiles refuses, before any work, an output that is one of the
// command's inputs (writing it would destroy what is being read) or
// another of its outputs (one would overwrite the other): the same path,
// or the same file through a link, symbolic or hard.
func checkFiles(outs, ins []fileArg) error {
	for i, o := range outs {
		if !o.isFile() || !replaced(o.path) {
			continue
		}
		for _, in := range ins {
			if in.isFile() && report.SameFile(o.path, in.path) {
				return fmt.Errorf("%w: %s %s is the input %s: writing it would destroy the input; name another output file",
					errUsage, o.name, o.path, inputName(in))
			}
		}
		for _, prev := range outs[:i] {
			if prev.isFile() && report.SameFile(o.path, prev.path) {
				return fmt.Errorf("%w: %s %s is also %s: one output would overwrite the other; name another file",
					errUsage, o.name, o.path, prev.name)
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

// inputName names an input in a refusal: its flag and path, or the path
// of a positional argument.
func inputName(in fileArg) string {
	if in.name == "" || in.name == in.path {
		return in.path
	}
	return in.name + " " + in.path
}

// listArgs are the paths of a comma list (--trace a,b; --from-raw a,b),
// each named by flag.
func listArgs(flag string, vals ...string) []fileArg {
	var out []fileArg
	for _, p := range splitList(vals) {
		out = append(out, fileArg{flag, p})
	}
	return out
}

// posArgs are positional file arguments, each named by its path.
func posArgs(paths []string) []fileArg {
	var out []fileArg
	for _, p := range paths {
		out = append(out, fileArg{p, p})
	}
	return out
}

// profileArgs are the files among a profile list's entries (the others
// are built-in names).
func profileArgs(flag, spec string) []fileArg {
	var out []fileArg
	for _, p := range strings.Split(spec, ",") {
		if p = strings.TrimSpace(p); p != "" && isFile(p) {
			out = append(out, fileArg{flag, p})
		}
	}
	return out
}

// originArgs are the files a loaded profile was merged from: its list's
// files and the bases they name.
func originArgs(flag string, prof *profile.Profile) []fileArg {
	var out []fileArg
	for _, o := range prof.Origins {
		if isFile(o) {
			out = append(out, fileArg{flag, o})
		}
	}
	return out
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// outputs are the files the command writes, --out and more (--plot),
// for checkFiles; they are kept for checkInputs.
func (o *outputFlags) outputs(more ...fileArg) []fileArg {
	o.outs = append([]fileArg{{"--out", o.out}}, more...)
	return o.outs
}

// checkInputs refuses inputs found after the flags were checked (a
// profile's bases) that are one of the outputs.
func (o *outputFlags) checkInputs(ins []fileArg) error {
	return checkFiles(o.outs, ins)
}

// hold makes the outputs written from now on wait for commit: a command
// with several outputs puts them in place together, once every one is
// written and nothing can fail any more, so that a command that fails
// writes no file. defer discard right after hold.
func (o *outputFlags) hold() { o.holding = true }

// write writes path atomically, or prepares it for commit while held.
func (o *outputFlags) write(path string, write func(io.Writer) error) error {
	if !o.holding {
		return report.WriteFileAtomic(path, write)
	}
	p, err := report.Prepare(path, write)
	if err != nil {
		return err
	}
	o.pending = append(o.pending, p)
	return nil
}

// commit puts every held output in place.
func (o *outputFlags) commit() error {
	o.holding = false
	defer o.discard()
	for _, p := range o.pending {
		if err := p.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// discard removes the held outputs not yet committed; their files stay as
// they were.
func (o *outputFlags) discard() {
	for _, p := range o.pending {
		p.Discard()
	}
	o.pending = nil
}

// notWritten ends a run's failure found after the work: the files it was
// asked to write are not written (or left as they were).
func notWritten(outs []fileArg) string {
	var names []string
	for _, o := range outs {
		if o.isFile() {
			names = append(names, o.path)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; not written: " + strings.Join(names, ", ")
}

// outputs are calibrate's files: the fragment and the raw measurements.
func (o calibrateOptions) outputs() []fileArg {
	return []fileArg{{"--out", o.out}, {"--raw", o.raw}}
}
