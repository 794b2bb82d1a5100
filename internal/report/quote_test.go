package report_test

import (
	"strings"
	"testing"

	"moebench/internal/report"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("9", 309)
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"bulk:16", `"bulk:16"`},
		{strings.Repeat("a", report.MaxQuoted), `"` + strings.Repeat("a", report.MaxQuoted) + `"`},
		{long, `"` + strings.Repeat("9", 32) + `…99999999" (309 characters)`},
		{"x\n" + strings.Repeat("é", 50), `"x\n` + strings.Repeat("é", 30) + `…` + strings.Repeat("é", 8) + `" (52 characters)`},
	} {
		if got := report.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q…) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestQuoteArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, `[]`},
		{[]string{"extra"}, `["extra"]`},
		{[]string{"a", "b", "c", "d"}, `["a" "b" "c" "d"]`},
		{[]string{"a", "b", "c", "d", "e", "f"}, `["a" "b" "c" "d" … (6 arguments)]`},
		{[]string{strings.Repeat("x", 50)}, `["` + strings.Repeat("x", 32) + `…xxxxxxxx" (50 characters)]`},
	} {
		if got := report.QuoteArgs(tc.in); got != tc.want {
			t.Errorf("QuoteArgs(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
