package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"moebench/internal/flagvalue"
	"moebench/internal/outfile"
	"moebench/internal/report"
	"moebench/profile"
)

// newFlags returns a FlagSet that reports errors instead of exiting and
// prints usage with examples to stdout on --help (help is the output asked
// for, not an error).
func newFlags(name, usage, examples string, stdout io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: moebench %s\n\nFlags:\n%s", usage, fs.FlagUsages())
		if examples != "" {
			fmt.Fprintf(stdout, "\nExamples:\n%s", examples)
		}
	}
	return fs
}

// parse parses args; --help is not an error (errHelpShown), bad flags are
// usage errors that name the flag.
func parse(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelpShown
		}
		return fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), flagvalue.ParseError(err))
	}
	return nil
}

// errHelpShown ends a command successfully after --help.
var errHelpShown = errors.New("help shown")

// outputFlags are shared by every command that renders results; the
// files it writes and whether they wait to be committed together are
// its outfile.Set.
type outputFlags struct {
	format string
	out    string
	// before, when set, runs before anything is written: a check on the
	// finished work (checkSetsRead) that can still refuse it.
	before func() error
	outfile.Set
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.format, "format", "table", "output format: table, json or csv")
	fs.StringVarP(&o.out, "out", "o", "", "write the result to `FILE` (atomically) instead of stdout")
}

func (o *outputFlags) check() error {
	if err := checkFormat(o.format); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return checkOut("--out", o.out)
}

// checkOut refuses, before any work, an output path that cannot be
// written ("" and "-" are stdout).
func checkOut(flag, path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if err := report.CheckWritable(path); err != nil {
		return fmt.Errorf("%w: %s: %v", errUsage, flag, err)
	}
	return nil
}

// emit renders to stdout or, atomically, to --out (held for commit after
// Hold).
func (o *outputFlags) emit(stdout io.Writer, write func(io.Writer) error) error {
	if o.before != nil {
		if err := o.before(); err != nil {
			return err
		}
	}
	return o.Put(o.out, stdout, write)
}

// profileFlags select a profile and overrides.
type profileFlags struct {
	spec     string
	sets     []string
	topology string // --topology, on the commands that register it
}

func (p *profileFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&p.spec, "profile", "p-ib", "platform profile: built-in name or JSON file; a comma list merges left to right")
	fs.StringArrayVar(&p.sets, "set", nil, "override a profile constant, `name=value` (repeatable; moebench profile --list names them)")
}

// loadFor loads the profile for command and arranges for out to refuse,
// before writing, a --set that the command's models never read.
func (p *profileFlags) loadFor(command string, out *outputFlags) (*profile.Profile, error) {
	prof, err := p.load()
	if err != nil {
		return nil, err
	}
	if err := out.checkInputs(outfile.Existing("--profile", prof.Origins)); err != nil {
		return nil, err
	}
	out.before = func() error { return checkSetsRead(command, prof, p.sets) }
	return prof, nil
}

// profileErr is an error of loading the profile flag names: a name that
// is no built-in profile is the command line's fault (usage), a profile
// file missing, too large or malformed is its data's.
func profileErr(flag string, err error) error {
	if errors.Is(err, profile.ErrUnknownName) {
		return fmt.Errorf("%w: %s: %v", errUsage, flag, err)
	}
	return fmt.Errorf("%s: %w", flag, err)
}

func (p *profileFlags) load() (*profile.Profile, error) {
	prof, err := profile.Load(p.spec)
	if err != nil {
		return nil, profileErr("--profile", err)
	}
	if err := p.applyTopology(prof); err != nil {
		return nil, err
	}
	if err := prof.ApplySets(p.sets); err != nil {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	return prof, nil
}

// checkSetsRead refuses --set constants that the command's models never
// read: an override that changes nothing is a mistake, not a no-op.
func checkSetsRead(command string, prof *profile.Profile, sets []string) error {
	names, err := profile.SetNames(sets)
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if u := prof.Unread(names); len(u) > 0 {
		return fmt.Errorf("%w: --set %s: %s does not use this constant here (moebench profile --list says what each one is for)", errUsage, strings.Join(u, ", "), command)
	}
	return nil
}

func header(command string, prof *profile.Profile, figures string) report.Header {
	h := report.Header{Tool: "moebench", Version: version, Command: command, Host: report.LocalHost(), Figures: figures}
	if prof != nil {
		h.Profile = prof.Name
		h.Origins = prof.Origins
	}
	return h
}

// splitList splits comma-separated flag values, dropping empty items.
var splitList = flagvalue.Split

// logFlags choose how much the libraries log to stderr.
type logFlags struct{ level string }

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.level, "log-level", "warn", "library logging on stderr: error, warn, info or debug")
}

// logger builds the zap logger the libraries get: human-readable lines on
// stderr, results staying alone on stdout.
func (l *logFlags) logger(stderr io.Writer) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(l.level)
	if err != nil {
		return nil, fmt.Errorf("%w: --log-level %s: want error, warn, info or debug", errUsage, report.Quote(l.level))
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	// Locked: a sweep's points, and a layer's two phases, log at once.
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(stderr)), lvl)
	return zap.New(core), nil
}
