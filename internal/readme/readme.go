// Package readme lets tests hold the README to the figures it quotes from
// the code: a size, a lookahead, a constant.
package readme

import (
	"os"
	"strings"
	"testing"
)

// Flat is text with its line breaks and runs of spaces as single spaces,
// so that a quote wrapped anywhere in the README still matches.
func Flat(text string) string { return strings.Join(strings.Fields(text), " ") }

// Says fails t unless the README at path says each claim (see Flat).
func Says(t testing.TB, path string, claims ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := Flat(string(b))
	for _, c := range claims {
		if !strings.Contains(text, c) {
			t.Errorf("%s lacks %q", path, c)
		}
	}
}
