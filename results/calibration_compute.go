package results

import (
	"fmt"
	"io"
	"text/tabwriter"

	"moebench/internal/report"
	"moebench/native/calib"
	"moebench/profile"
)

// ComputeCalibration is calibrate --compute's document: the expert GEMMs
// as measured, alone and beside a layer, the model's fit to them and the
// constants fitted.
type ComputeCalibration struct {
	Header    report.Header         `json:"-"`
	Measured  calib.ComputeMeasured `json:"measured"`
	Fit       []calib.FitRow        `json:"fit"`
	Constants []profile.Constant    `json:"constants"`
	fit       calib.ComputeFit      // the table's errors and slowdowns
}

// NewComputeCalibration is the document of the fit of m and the
// constants it gives.
func NewComputeCalibration(h report.Header, m calib.ComputeMeasured, fit calib.ComputeFit, consts []profile.Constant) *ComputeCalibration {
	return &ComputeCalibration{Header: h, Measured: m, Fit: fit.Rows, Constants: consts, fit: fit}
}

// Head is the document's header.
func (d *ComputeCalibration) Head() report.Header { return d.Header }

// WriteText shows each GEMM measured against the fitted model, the
// interference rows and the constants.
func (d *ComputeCalibration) WriteText(w io.Writer) error {
	m, fit := d.Measured, d.fit
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "# expert GEMMs on %s (driver %s, CUDA %s, %d SMs): cuBLASLt, measured against the fitted model\n", m.GPU, m.Driver, m.CUDA, m.SMs)
	fmt.Fprintln(tw, "op\tdtype\texperts\ttokens\tk\tn\tmeasured µs\tmodel µs\tmodel/measured\tTFLOPS\tGB/s")
	for _, r := range fit.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%.3f\t%s\t%s\n", r.Op, r.DType, r.Groups, r.Tokens, r.K, r.N,
			report.Sig3(r.MeanUs), report.Sig3(r.ModelUs), r.Ratio(), report.Sig3(r.Flops/r.MeanUs/1e6), report.Sig3(r.Bytes/r.MeanUs/1e3))
	}
	fmt.Fprintf(tw, "# the model is within %.1f%% of every grouped GEMM of 2 experts or more (median %.1f%%); a single expert's GEMM, left out of the fit, within %.1f%%\n",
		100*fit.MaxErr, 100*fit.MedianErr, 100*fit.SingleErr)
	if len(m.Beside) > 0 {
		c := fit.Costs
		fmt.Fprintf(tw, "\n# a GEMM beside a normal-mode layer on the same GPU, µs: measured, and the fit's slowdowns (%.3g for the GEMM, %.3g for the phases) applied to each alone\n", c.Beside, c.CommBeside)
		fmt.Fprintln(tw, "layer\tcomm SMs\tGEMM\tGEMM SMs\talone\tbeside\tmodel\tdispatch alone\tbeside\tmodel\tcombine alone\tbeside\tmodel")
		for _, b := range m.Beside {
			fmt.Fprintf(tw, "%s\t%d\t%s %s %d × %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Layer, b.CommSMs, b.GEMM.DType, b.GEMM.Op, b.GEMM.Groups, b.GEMM.Tokens,
				b.GEMM.SMTarget, report.Sig3(b.GEMM.MeanUs), report.Sig3(b.BesideUs), report.Sig3(b.GEMM.MeanUs*c.Beside),
				report.Sig3(b.DispatchUs), report.Sig3(b.DispatchBy), report.Sig3(b.DispatchUs*c.CommBeside),
				report.Sig3(b.CombineUs), report.Sig3(b.CombineBy), report.Sig3(b.CombineUs*c.CommBeside))
		}
	}
	fmt.Fprintln(tw, "\nconstant\tvalue\tunit")
	for _, c := range d.Constants {
		fmt.Fprintf(tw, "%s\t%v\t%s\n", c.Name, c.Value, c.Unit)
	}
	return tw.Flush()
}
