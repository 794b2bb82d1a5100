package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"moebench/internal/field"
	"moebench/internal/report"
)

// version is stamped by the Makefile (-ldflags "-X main.version=...").
var version = "dev"

// errUsage marks errors caused by how moebench was called.
var errUsage = errors.New("usage")

// message is err's text without the usage marker's own prefix.
// message is err as the command line shows it: a field a library names
// (field.Error) shown as its flag.
func message(err error) string {
	s := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
	for _, f := range field.Fields(err) {
		s = strings.Replace(s, f.Error(), "--"+f.Error(), 1)
	}
	return s
}

func exitCode(err error) int {
	if errors.Is(err, errUsage) {
		return 2
	}
	return 1
}

type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "simulate MoE dispatch and combine over the transports, with layer timings", runRun},
		{"sweep", "run the layer over lists of any knob", runSweep},
		{"size", "size QPs, DCIs, proxy threads and buffers for a deployment: Pareto front and recommendation", runSize},
		{"merge", "combine the JSON shards of a sharded sweep or size into the unsharded result", runMerge},
		{"report", "render result JSON files as one self-contained HTML page with tables and plots", runReport},
		{"replay", "replay a routing trace through the layer on the transports", runReplay},
		{"mech", "run the paper's GPU-submission microbenchmarks in the model", runMech},
		{"validate", "compare every modelled experiment with the paper's measurement", runValidate},
		{"trace", "generate, convert and inspect routing traces", runTrace},
		{"calibrate", "measure the GPU-side constants on the local GPU (native library)", runCalibrate},
		{"profile", "list platform profiles and their constants with sources", runProfile},
		{"version", "print the version", func(args []string, stdout, _ io.Writer) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				_, err := io.WriteString(stdout, "Usage: moebench version\n\nPrints the version the binary was built from.\n")
				return err
			}
			if len(args) > 0 {
				return fmt.Errorf("%w: version takes no arguments or flags (got %s)", errUsage, report.QuoteArgs(args))
			}
			_, err := fmt.Fprintln(stdout, "moebench", version)
			return err
		}},
	}
}

// run dispatches a subcommand; main only calls this.
func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		// moebench help help (or --help) is help's own help: the usage.
		if len(args) == 1 || (args[0] == "help" && len(args) == 2 && slices.Contains([]string{"help", "--help", "-h"}, args[1])) {
			usage(stdout)
			return nil
		}
		if args[0] != "help" {
			return fmt.Errorf("%w: %s takes no arguments (moebench help COMMAND shows a command's help)", errUsage, args[0])
		}
		// One command, or trace and one of its subcommands.
		if len(args) > 3 || (len(args) == 3 && args[1] != "trace") {
			return fmt.Errorf("%w: help takes one command (got %s)", errUsage, report.QuoteArgs(args[1:]))
		}
		// moebench help CMD [SUB] is moebench CMD [SUB] --help.
		return run(append(slices.Clone(args[1:]), "--help"), stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			if errors.Is(err, errHelpShown) {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("%w: unknown command %s (moebench help lists them)", errUsage, report.Quote(args[0]))
}

func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("moebench: what the transport under expert-parallel MoE communication costs\n\nUsage: moebench COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun moebench COMMAND --help for a command's flags and examples.\n\n")
	b.WriteString(exitCodes)
	io.WriteString(w, b.String())
}

// exitCodes is the rule every command follows (exitCode, main); README.md
// states it in the same words.
const exitCodes = `Exit codes:
  0    done: every output asked for is written
  1    an input file is missing, unreadable, too large or malformed, or the
       run failed (a check found wrong data, the native library is absent,
       the study has no answer)
  2    the command line is at fault: an unknown, missing or malformed flag or
       argument, a value out of range, an unknown name, a configuration that
       cannot be deployed or run, or an output that cannot be written or
       would overwrite an input or another output
  130  interrupted (SIGINT; 143 for SIGTERM)
Whenever the exit is not 0, no --out, --plot or --raw file is written or
changed and no temporary file is left; what went to stdout stays.
`
