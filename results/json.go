package results

import (
	"io"

	"moebench/internal/report"
)

// A JSONer writes its own JSON, for a document whose JSON is not its
// fields' (one that streams, or whose rows are keyed by their reference).
type JSONer interface {
	WriteJSON(w io.Writer) error
}

func init() {
	Register("json", func(d Document) (Reporter, error) {
		if j, ok := d.(JSONer); ok {
			return j.WriteJSON, nil
		}
		return func(w io.Writer) error { return report.WriteJSON(w, d) }, nil
	})
}
