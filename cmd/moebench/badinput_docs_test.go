package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// badInputsDocs are the second hardening round's cases of one area; see
// TestBadInputs for what each must do.
func badInputsDocs() []badInput {
	return []badInput{
		{name: "docs validate deepep with only", args: []string{"validate", "--against", "deepep", "--only", "rate"}, code: 2, msg: "--only"},
		{name: "docs validate deepep with measured", args: []string{"validate", "--against", "deepep", "--measured", "m.json"}, files: fileOf("m.json", "{}"), code: 1, msg: `--measured: m.json: no "runs"`},
		{name: "docs validate deepep set unread", args: []string{"validate", "--against", "deepep", "--set", "proxy.base_publish_ns=1"}, code: 2, msg: "proxy.base_publish_ns"},
		{name: "docs validate deepep set unknown", args: []string{"validate", "--against", "deepep", "--set", "gpu.clock=1"}, code: 2, msg: "gpu.clock"},
		{name: "docs help of a trace command and more", args: []string{"help", "trace", "gen", "extra"}, code: 2, msg: "extra"},
		{name: "docs trace help of two commands", args: []string{"trace", "help", "gen", "inspect"}, code: 2, msg: "inspect"},
		{name: "docs trace --help with an argument", args: []string{"trace", "--help", "gen"}, code: 2, msg: "trace --help takes no arguments"},
		{name: "docs trace help of an unknown command", args: []string{"trace", "help", "nosuch"}, code: 2, msg: "nosuch"},
	}
}

// Each way of asking for the same help prints the same text, once.
func TestHelpAliases(t *testing.T) {
	t.Parallel()
	for _, tc := range [][2][]string{
		{{"help", "help"}, {"--help"}},
		{{"help", "--help"}, {"--help"}},
		{{"trace", "help"}, {"trace", "--help"}},
		{{"trace", "help", "gen"}, {"trace", "gen", "--help"}},
		{{"help", "trace", "inspect"}, {"trace", "inspect", "-h"}},
	} {
		var a, b bytes.Buffer
		errA, errB := run(tc[0], &a, io.Discard), run(tc[1], &b, io.Discard)
		if errA != nil || errB != nil || a.String() != b.String() || strings.Count(a.String(), "Usage: moebench") != 1 {
			t.Errorf("moebench %s (error %v) and moebench %s (error %v) differ, or print no usage or two:\n%s\n--\n%s",
				strings.Join(tc[0], " "), errA, strings.Join(tc[1], " "), errB, a.String(), b.String())
		}
	}
}
