package layer

import (
	"fmt"

	"moebench/internal/field"
	"moebench/internal/report"
	"moebench/moe"
	"moebench/native"
)

// NCCLName is the baseline's name where transports are listed.
const NCCLName = "nccl-a2a"

// A2ABytes are the per-peer bytes of the layer's dispatch and combine,
// [src][dst], as the native kernels move them: LL, every (token, expert)
// message; normal mode, every token once per rank holding its experts
// (hidden in the dispatch dtype plus scales, and hidden in BF16 back).
func A2ABytes(rt *moe.Routing, normal bool) (dispatch, combine [][]int64) {
	s := rt.Shape
	R := s.Ranks
	dispatch, combine = square(R), square(R)
	if normal {
		n := rt.Normal()
		in := int64(s.DispatchVectorBytes())
		back := int64(s.Hidden * s.Combine.Bytes())
		for src := range R {
			for dst := range R {
				k := int64(n.TokensPerRank[src*R+dst])
				dispatch[src][dst] = k * in
				combine[dst][src] = k * back
			}
		}
		return dispatch, combine
	}
	l := rt.LL()
	E, nl := s.Physical(), s.LocalExperts()
	for src := range R {
		for e := range E {
			k := int64(l.Counts[src*E+e])
			dst := e / nl
			dispatch[src][dst] += k * int64(s.LLDispatchBytes())
			combine[dst][src] += k * int64(s.LLCombineBytes())
		}
	}
	return dispatch, combine
}

func square(n int) [][]int64 {
	m := make([][]int64, n)
	for i := range m {
		m[i] = make([]int64, n)
	}
	return m
}

// A2AStats is NCCL's all-to-all beside a configuration: dispatch's and
// combine's bytes, each timed on its own.
type A2AStats struct {
	Dispatch native.A2AResult `json:"dispatch"`
	Combine  native.A2AResult `json:"combine"`
	// AlgoGBps per phase: the mean over ranks of the bytes a rank
	// receives over the all-to-all's time, as the layer's figures count.
	DispatchGBps float64 `json:"dispatch_algo_gbps"`
	CombineGBps  float64 `json:"combine_algo_gbps"`
}

// RunNCCL times NCCL's all-to-all at rt's per-peer bytes: one rank per GPU.
func RunNCCL(lib Runner, rt *moe.Routing, o Options, ncclLib string) (*A2AStats, error) {
	s := rt.Shape
	if o.GPUs != s.Ranks {
		return nil, planErr("%w", field.Errorf("virtual-ranks", "%s runs one rank per GPU: %d ranks on %s (give gpus alone)", NCCLName, s.Ranks, report.Count(max(1, o.GPUs), "GPU")))
	}
	if err := haveGPUs(lib, o.GPUs); err != nil {
		return nil, err
	}
	reps := o.Reps
	if reps == 0 {
		reps = DefaultReps
	}
	d, c := A2ABytes(rt, o.Mode == moe.Normal)
	out := &A2AStats{}
	for _, ph := range []struct {
		bytes [][]int64
		res   *native.A2AResult
		gbps  *float64
	}{{d, &out.Dispatch, &out.DispatchGBps}, {c, &out.Combine, &out.CombineGBps}} {
		r, err := lib.NCCLAllToAll(native.A2AConfig{Bytes: ph.bytes, Warmup: o.Warmup, Reps: reps, Lib: ncclLib})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", NCCLName, err)
		}
		*ph.res = r
		if r.MeanUs > 0 {
			var recv int64
			for _, b := range received(ph.bytes) {
				recv += b
			}
			*ph.gbps = float64(recv) / float64(len(ph.bytes)) / (r.MeanUs * 1e3)
		}
	}
	return out, nil
}
