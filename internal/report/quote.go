package report

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxQuoted is the most characters of a value Quote shows.
const MaxQuoted = 40

// Quote is s quoted as %q quotes it, bounded: a value longer than
// MaxQuoted characters keeps its start and end around an ellipsis and
// says how long it was, so that a message echoing what was typed (a
// 309-digit number, a pasted file) stays one readable line. Every message
// that quotes input quotes it with Quote.
func Quote(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= MaxQuoted {
		return strconv.Quote(s)
	}
	const tail = 8
	r := []rune(s)
	h, t := strconv.Quote(string(r[:MaxQuoted-tail])), strconv.Quote(string(r[n-tail:]))
	return fmt.Sprintf("%s…%s (%d characters)", h[:len(h)-1], t[1:], n)
}

// QuoteArgs is arguments echoed back, each quoted bounded (Quote), at
// most the first four of them, then how many there were: "[a b c d … (9
// arguments)]".
func QuoteArgs(args []string) string {
	const most = 4
	var q []string
	for _, a := range args[:min(len(args), most)] {
		q = append(q, Quote(a))
	}
	if len(args) > most {
		q = append(q, fmt.Sprintf("… (%d arguments)", len(args)))
	}
	return "[" + strings.Join(q, " ") + "]"
}
