package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Header identifies a report: what produced it, on which profile and host,
// and whether its figures are modelled or measured.
type Header struct {
	Tool    string   `json:"tool"`
	Version string   `json:"version"`
	Command string   `json:"command"`
	Profile string   `json:"profile,omitempty"`
	Origins []string `json:"profile_sources,omitempty"`
	Host    Host     `json:"host"`
	Seed    *uint64  `json:"seed,omitempty"`
	Figures string   `json:"figures"` // "modelled", "measured", or both
	Extra   []string `json:"notes,omitempty"`
}

// Lines renders the header as text lines without a comment prefix.
func (h Header) Lines() []string {
	l := []string{fmt.Sprintf("%s %s %s · figures %s", h.Tool, h.Version, h.Command, h.Figures)}
	if h.Profile != "" {
		p := "profile " + h.Profile
		if len(h.Origins) > 1 {
			p += " (" + strings.Join(h.Origins, " + ") + ")"
		}
		l = append(l, p)
	}
	l = append(l, "host "+h.Host.String())
	if h.Seed != nil {
		l = append(l, "seed "+strconv.FormatUint(*h.Seed, 10))
	}
	return append(l, h.Extra...)
}

// Table is a rectangular result ready to render. Cells are strings; numeric
// columns are right-aligned in text output.
type Table struct {
	Columns []string
	Numeric []bool
	Rows    [][]string
}

// WriteText writes an aligned table, header lines first as "# " comments.
func (t *Table) WriteText(w io.Writer, h *Header) error {
	var b strings.Builder
	if h != nil {
		for _, l := range h.Lines() {
			b.WriteString("# " + l + "\n")
		}
		b.WriteString("\n")
	}
	width := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		width[i] = utf8.RuneCountInString(c)
	}
	for _, r := range t.Rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.Numeric) && t.Numeric[i] {
				b.WriteString(pad + c)
			} else if i == len(cells)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		b.WriteString("\n")
	}
	line(t.Columns)
	rule := make([]string, len(t.Columns))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule)
	for _, r := range t.Rows {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes the header as "# " comment lines, then RFC 4180 records.
func (t *Table) WriteCSV(w io.Writer, h *Header) error {
	if h != nil {
		for _, l := range h.Lines() {
			if _, err := io.WriteString(w, "# "+l+"\n"); err != nil {
				return err
			}
		}
	}
	cw := csv.NewWriter(w)
	cw.Write(t.Columns)
	for _, r := range t.Rows {
		cw.Write(r)
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes v indented, with a trailing newline.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Num formats a figure with three significant digits, the precision the
// model's inputs support; NaN renders as "—".
func Num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v == 0:
		return "0"
	case math.Abs(v) >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Pct formats a fraction as a percentage with one decimal.
func Pct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
}

// Count is n and its noun, singular for one: "1 GPU", "8 GPUs".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
