// Package readme lets tests hold the README to the figures it quotes from
// the code: a size, a lookahead, a constant.
package readme

import (
	"os"
	"strings"
	"testing"
)

// Says fails t unless the README at path says each claim, with the
// README's line breaks and runs of spaces read as single spaces.
func Says(t testing.TB, path string, claims ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(b)), " ")
	for _, c := range claims {
		if !strings.Contains(text, c) {
			t.Errorf("%s lacks %q", path, c)
		}
	}
}
