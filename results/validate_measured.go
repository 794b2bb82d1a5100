package results

import (
	"moebench/internal/report"
	"moebench/native/calib"
)

// NewValidateMeasured is the document of a measurement beside the model
// (calib.Compared) under h: a layer's runs, read from path, or a GPU-side
// record's rows with the note of where it was measured.
func NewValidateMeasured(h report.Header, c calib.Compared, path string) *Validate {
	if c.Layer != nil {
		return NewValidateLayer(h, c.Layer, c.Runs, path)
	}
	h.Extra = append(h.Extra, c.Note)
	return NewValidate(h, c.Rows, &c.Summary, "measured")
}
