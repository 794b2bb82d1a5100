package calib

import (
	"fmt"

	"moebench/moe"
	nativelayer "moebench/native/layer"
	"moebench/workloads"
)

// BesideRunner is what MeasureBeside needs of the native library: its
// GEMMs, and the layer alone and beside one.
type BesideRunner interface {
	ComputeRunner
	nativelayer.BesideRunner
}

// MeasureExperts times w's expert GEMMs (MeasureCompute over GEMMRows),
// then the GEMM beside a normal-mode layer (MeasureBeside).
func MeasureExperts(lib BesideRunner, w workloads.Workload, quick bool, progress func(string)) (ComputeMeasured, error) {
	co := ComputeOptions{Hidden: w.Shape.Hidden, Intermediate: w.Compute.Intermediate, Quick: quick}
	m, err := MeasureCompute(lib, co, progress)
	if err != nil {
		return m, err
	}
	m.Beside, err = MeasureBeside(lib, w, quick, progress)
	return m, err
}

// MeasureBeside times a normal-mode dispatch of DeepSeek-V3 on two
// virtual ranks of 12 SMs each (24 SMs, DeepEP's normal-mode default for
// one GPU) beside the up projection of 8 experts on the SMs it leaves,
// and both alone.
func MeasureBeside(lib BesideRunner, w workloads.Workload, quick bool, progress func(string)) ([]BesideRow, error) {
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
	var rows []BesideRow
	for _, tokens := range []int{256, 1024} {
		g := GEMMRow{Op: "up", DType: "fp8", Groups: 8, Tokens: tokens, K: s.Hidden, N: 2 * w.Compute.Intermediate,
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
		rows = append(rows, BesideRow{Layer: fmt.Sprintf("normal direct, %d ranks × %d tokens", s.Ranks, s.Tokens),
			CommSMs: comm, GEMM: g, BesideUs: gb.MeanUs, BesideCalls: gb.Calls,
			DispatchUs: layer.Dispatch.Ready.Mean, CombineUs: layer.Combine.Ready.Mean,
			DispatchBy: by.Dispatch.Ready.Mean, CombineBy: by.Combine.Ready.Mean})
	}
	return rows, nil
}
