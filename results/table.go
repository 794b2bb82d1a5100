package results

import "io"

// A Texter renders itself as aligned text tables: the table format.
type Texter interface {
	WriteText(w io.Writer) error
}

func init() {
	Register("table", func(d Document) (Reporter, error) {
		t, ok := d.(Texter)
		if !ok {
			return nil, unsupported(d)
		}
		return t.WriteText, nil
	})
}
