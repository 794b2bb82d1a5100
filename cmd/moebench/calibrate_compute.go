package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"moebench/internal/report"
	"moebench/profile"

	"moebench/internal/inputfile"
	"moebench/moe"
	"moebench/native"
	"moebench/native/calib"
	nativelayer "moebench/native/layer"
	"moebench/workloads"
)

// computeLib is what calibrate --compute needs of the native library.
type computeLib interface {
	calib.ComputeRunner
	nativelayer.BesideRunner
	Close() error
}

var openComputeLib = func(path string) (computeLib, error) { return native.Open(path) }

// calibrateCompute times the expert GEMMs of DeepSeek-V3's shape alone
// and beside a normal-mode dispatch, fits the model's compute costs and
// writes them as a profile fragment.
func calibrateCompute(o calibrateOptions, stdout, stderr io.Writer) error {
	w, err := workloads.Get("deepseek-v3")
	if err != nil {
		return err
	}
	var m calib.ComputeMeasured
	if o.fromRaw != "" {
		data, err := readMeasured("--from-raw", o.fromRaw)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("--from-raw %s: %w", o.fromRaw, inputfile.JSONError("", data, err))
		}
	} else {
		lib, err := openComputeLib(o.lib)
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		defer lib.Close()
		progress := func(s string) { fmt.Fprintln(stderr, "calibrate:", s) }
		co := calib.ComputeOptions{Hidden: w.Shape.Hidden, Intermediate: w.Compute.Intermediate, Quick: o.quick}
		if m, err = calib.MeasureCompute(lib, co, progress); err != nil {
			return err
		}
		if m.Beside, err = measureBeside(lib, w, o.quick, progress); err != nil {
			return err
		}
	}
	return finishCompute(m, o, stdout)
}

// measureBeside times a normal-mode dispatch of DeepSeek-V3 on two
// virtual ranks of 12 SMs each (24 SMs, DeepEP's normal-mode default for
// one GPU) beside the up projection of 8 experts on the SMs it leaves,
// and both alone.
func measureBeside(lib computeLib, w workloads.Workload, quick bool, progress func(string)) ([]calib.BesideRow, error) {
	s := w.Shape
	s.Ranks, s.GPUsPerNode, s.Tokens = 2, 2, 4096
	if quick {
		s.Tokens = 512
	}
	rt, err := moe.Generate(s, moe.RoutingSpec{}, 1)
	if err != nil {
		return nil, err
	}
	const smsPerRank = 12
	comm := s.Ranks * smsPerRank
	o := nativelayer.Options{GPUs: 1, SMsPerRank: smsPerRank, Warmup: 2, Reps: 10, Mode: moe.Normal, NoVerify: true,
		Timeout: nativelayer.DefaultTimeout}
	tr := nativelayer.Transport{Direct: true}
	var rows []calib.BesideRow
	for _, tokens := range []int{256, 1024} {
		g := calib.GEMMRow{Op: "up", DType: "fp8", Groups: 8, Tokens: tokens, K: s.Hidden, N: 2 * w.Compute.Intermediate,
			SMTarget: lib.Device().SMs - comm}
		progress(fmt.Sprintf("normal-mode dispatch on %d SMs beside %d experts × %d tokens of FP8 up projection", comm, g.Groups, g.Tokens))
		alone, err := lib.GEMM(g.Config())
		if err != nil {
			return nil, fmt.Errorf("GEMM alone: %w", err)
		}
		g.GEMMResult = alone
		layer, err := nativelayer.Run(lib, rt, tr, o, moe.Background{})
		if err != nil {
			return nil, fmt.Errorf("normal-mode layer alone: %w", err)
		}
		by, gb, err := nativelayer.RunBeside(lib, rt, tr, o, moe.Background{}, g.Config())
		if err != nil {
			return nil, fmt.Errorf("normal-mode layer beside a GEMM: %w", err)
		}
		rows = append(rows, calib.BesideRow{Layer: fmt.Sprintf("normal direct, %d ranks × %d tokens", s.Ranks, s.Tokens),
			CommSMs: comm, GEMM: g, BesideUs: gb.MeanUs, BesideCalls: gb.Calls,
			DispatchUs: layer.Dispatch.Ready.Mean, CombineUs: layer.Combine.Ready.Mean,
			DispatchBy: by.Dispatch.Ready.Mean, CombineBy: by.Combine.Ready.Mean})
	}
	return rows, nil
}

// finishCompute fits the compute model, writes the fragment (with the
// raw record inside it) and the raw file, and renders the fit.
func finishCompute(m calib.ComputeMeasured, o calibrateOptions, stdout io.Writer) error {
	if !o.baseSet {
		// The fit rests on the datasheet's peaks: take the measured GPU's.
		o.base = profile.ForGPU(m.GPU)
	}
	base, err := profile.Load(o.base)
	if err != nil {
		return profileErr("--base", err)
	}
	fit, err := calib.FitCompute(m, base)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	consts := fit.Constants(m)
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	frag := profile.File{
		Name: "compute-calibration",
		Description: fmt.Sprintf("expert GEMM constants fitted by moebench calibrate --compute on %s (driver %s, CUDA %s); combine after a full profile, e.g. %s,%s",
			m.GPU, m.Driver, m.CUDA, o.base, o.out),
		Constants: consts,
		Measured:  raw,
	}
	var files outputFlags
	files.hold() // the fragment and the raw file, both or neither
	defer files.discard()
	if err := files.write(o.out, func(w io.Writer) error { return profile.WriteFragment(w, frag) }); err != nil {
		return fmt.Errorf("calibrate: --out: %w", err)
	}
	if o.raw != "" {
		if err := files.write(o.raw, func(w io.Writer) error { return writeJSON(w, m) }); err != nil {
			return fmt.Errorf("calibrate: --raw: %w", err)
		}
	}
	if err := files.commit(); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	if o.format == "json" {
		return writeJSON(stdout, struct {
			Measured  calib.ComputeMeasured `json:"measured"`
			Fit       []calib.FitRow        `json:"fit"`
			Constants []profile.Constant    `json:"constants"`
		}{m, fit.Rows, consts})
	}
	return writeComputeTable(stdout, m, fit, consts)
}

// writeComputeTable shows each GEMM measured against the fitted model,
// the interference rows and the constants.
func writeComputeTable(w io.Writer, m calib.ComputeMeasured, fit calib.ComputeFit, consts []profile.Constant) error {
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
	for _, c := range consts {
		fmt.Fprintf(tw, "%s\t%v\t%s\n", c.Name, c.Value, c.Unit)
	}
	return tw.Flush()
}
