package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// README.md and moebench --help state the same exit-code rule, word for
// word.
func TestExitCodesDocumented(t *testing.T) {
	t.Parallel()
	var help bytes.Buffer
	if err := run([]string{"--help"}, &help, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(help.String(), "\n\n"+exitCodes) {
		t.Errorf("moebench --help does not end with the exit codes:\n%s", help.String())
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n### Exit codes\n")
	if !ok {
		t.Fatal(`README.md has no "### Exit codes" section`)
	}
	_, block, ok := strings.Cut(sec, "```text\n")
	if block, _, _ = strings.Cut(block, "```"); !ok || block != exitCodes {
		t.Errorf("README's exit codes differ from --help's:\nREADME:\n%s\n--help:\n%s", block, exitCodes)
	}
	// The rule the text states is the one exitCode applies.
	for _, tc := range []struct {
		err  error
		code int
	}{{errUsage, 2}, {os.ErrNotExist, 1}} {
		if got := exitCode(tc.err); got != tc.code || !strings.Contains(exitCodes, "\n  "+string(rune('0'+got))+" ") {
			t.Errorf("exitCode(%v) = %d, want %d, documented", tc.err, got, tc.code)
		}
	}
}
