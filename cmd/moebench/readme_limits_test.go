package main

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// The README's Limits examples are what the commands print: each line of
// the output block after a command is in that command's output or error.
func TestREADMELimits(t *testing.T) {
	t.Parallel()
	text := readme(t)
	for _, tc := range []struct{ cmd, before string }{
		// Refused: in the prose, as the README's sh blocks hold commands
		// that run.
		{"moebench run --preset deepep-v1 --mode normal --ranks 256", "`%s`, is refused:\n\n```\n"},
		{"moebench run --preset deepep-v1 --ranks 256", "```sh\n%s\n```\n\n```\n"},
		{"moebench size --ranks 256 --transport mini-gda --set nic.max_qps=300", "```sh\n%s\n```\n\n```\n"},
	} {
		cmd := tc.cmd
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			before := fmt.Sprintf(tc.before, cmd)
			i := strings.Index(strings.ReplaceAll(text, "\n`moebench run", " `moebench run"), before)
			if i < 0 {
				t.Fatalf("README lacks %q with its output", cmd)
			}
			body := strings.ReplaceAll(text, "\n`moebench run", " `moebench run")[i+len(before):]
			var out strings.Builder
			err := run(strings.Fields(cmd)[1:], &out, io.Discard)
			got := out.String()
			if err != nil {
				got += "moebench: " + message(err) + "\n"
			}
			for _, l := range blockLines(body) {
				if !strings.Contains(got, l+"\n") {
					t.Errorf("README line not in what %s prints:\n%s\n--- it prints:\n%s", cmd, l, got)
				}
			}
		})
	}
	// What the prose quotes of the run over the cap.
	var out strings.Builder
	if err := run([]string{"run", "--preset", "deepep-v1", "--mode", "normal", "--ranks", "256", "--tokens", "8", "--over-limit", "deepep-v1.normal_ranks"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"# RUN OVER A LIMIT: deepep-v1 over\ndeepep-v1.normal_ranks: 256 ranks, more than 160 (", "`160% OVER`"} {
		if !strings.Contains(text, q) {
			t.Errorf("README does not say %q", q)
		}
		q = strings.ReplaceAll(strings.ReplaceAll(strings.Trim(q, "`("), "\n", " "), "`", "")
		if !strings.Contains(out.String(), q) {
			t.Errorf("the run over the cap does not print %q", q)
		}
	}
}
