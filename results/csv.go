package results

import (
	"fmt"
	"io"
	"math"
	"strconv"
)

// A CSVer renders itself as RFC 4180 records at full precision, the
// header as "# " comment lines: the csv format.
type CSVer interface {
	WriteCSV(w io.Writer) error
}

func init() {
	Register("csv", func(d Document) (Reporter, error) {
		c, ok := d.(CSVer)
		if !ok {
			return nil, unsupported(d)
		}
		return c.WriteCSV, nil
	})
}

// csvFloat is a figure in a CSV cell: six significant digits.
func csvFloat(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// csvNum is csvFloat with NaN (no value) as an empty cell.
func csvNum(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return fmt.Sprintf("%.6g", v)
}
