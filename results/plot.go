package results

import (
	"io"

	"moebench/internal/plot"
)

// A Plotter draws itself as a figure: the svg and png formats.
type Plotter interface {
	Figure() plot.Figure
}

func init() {
	for _, format := range []string{"svg", "png"} {
		Register(format, func(d Document) (Reporter, error) {
			p, ok := d.(Plotter)
			if !ok {
				return nil, unsupported(d)
			}
			return func(w io.Writer) error { return plot.Render(w, format, p.Figure()) }, nil
		})
	}
}
