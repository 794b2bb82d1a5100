package results

import (
	"fmt"
	"io"

	"moebench/internal/report"
	"moebench/profile"
)

// Profiles is profile's document: one of its three views as a table
// without a header, and its JSON: the schema (ProfileSchema), the
// built-in profiles (ProfileBuiltins) or one profile's constants
// (ProfileConstants).
type Profiles struct {
	table report.Table
	json  any
}

// Head is the document's header: the command alone, which the tables do
// not print.
func (d *Profiles) Head() report.Header { return report.Header{Command: "profile"} }

// WriteText is the table format.
func (d *Profiles) WriteText(w io.Writer) error { return d.table.WriteText(w, nil) }

// WriteCSV is the csv format.
func (d *Profiles) WriteCSV(w io.Writer) error { return d.table.WriteCSV(w, nil) }

// WriteJSON is the json format: the view's own values, not the table.
func (d *Profiles) WriteJSON(w io.Writer) error { return report.WriteJSON(w, d.json) }

// ProfileSchema is every constant the model reads, with its unit, range
// and meaning.
func ProfileSchema() *Profiles {
	defs := profile.Defs()
	d := &Profiles{json: defs, table: report.Table{Columns: []string{"name", "unit", "min", "max", "meaning"},
		Numeric: []bool{false, false, true, true, false}}}
	for _, c := range defs {
		d.table.Rows = append(d.table.Rows, []string{c.Name, c.Unit, report.Num(c.Min), report.Num(c.Max), c.Doc})
	}
	return d
}

// ProfileBuiltins are the built-in profiles, each with its base and
// description.
func ProfileBuiltins() (*Profiles, error) {
	d := &Profiles{table: report.Table{Columns: []string{"profile", "base", "description"}}}
	var all []map[string]string
	for _, n := range profile.Builtins() {
		p, err := profile.Load(n)
		if err != nil {
			return nil, fmt.Errorf("built-in profile %s: %w", n, err)
		}
		d.table.Rows = append(d.table.Rows, []string{n, p.Base, p.Description})
		all = append(all, map[string]string{"name": n, "base": p.Base, "description": p.Description})
	}
	d.json = all
	return d, nil
}

// ProfileConstants are p's constants, each with the kind of source its
// value rests on and, where a base profile set it, which; the JSON
// carries the same as each constant's kind and from.
func ProfileConstants(p *profile.Profile) *Profiles {
	cs := p.Constants()
	d := &Profiles{json: profile.File{Name: p.Name, Description: p.Description, Constants: cs},
		table: report.Table{Columns: []string{"name", "value", "unit", "kind", "inherited_from", "source"},
			Numeric: []bool{false, true, false, false, false, false}}}
	for _, c := range cs {
		d.table.Rows = append(d.table.Rows, []string{c.Name, fmt.Sprintf("%g", c.Value), c.Unit, c.Kind.String(), p.InheritedFrom(c.Name), c.Source})
	}
	return d
}
