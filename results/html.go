package results

import "io"

// An HTMLer renders itself as a self-contained HTML page: the html format.
type HTMLer interface {
	WriteHTML(w io.Writer) error
}

func init() {
	Register("html", func(d Document) (Reporter, error) {
		h, ok := d.(HTMLer)
		if !ok {
			return nil, unsupported(d)
		}
		return h.WriteHTML, nil
	})
}
