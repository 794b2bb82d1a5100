package layer

import (
	"errors"
	"fmt"
	"math"

	"moebench/moe"
	"moebench/native"
)

// Runner is what a native layer run needs of the library; *native.Lib
// implements it.
type Runner interface {
	Device() native.DeviceInfo
	DeviceCount() (int, error)
	Layer(native.LayerConfig, native.LayerRouting) (native.LayerResult, error)
	NCCLAllToAll(native.A2AConfig) (native.A2AResult, error)
}

// Flatten puts a routing in the library's form: rows [ranks][tokens][k],
// -1 beyond a rank's tokens, and the dispatch oracle's per-expert counts.
func Flatten(rt *moe.Routing) native.LayerRouting {
	s := rt.Shape
	n := s.Ranks * s.Tokens * s.TopK
	out := native.LayerRouting{
		TokensPerRank: make([]int32, s.Ranks),
		TopK:          make([]int32, n),
		Weights:       make([]float32, n),
	}
	for i := range out.TopK {
		out.TopK[i] = -1
	}
	for r := range s.Ranks {
		out.TokensPerRank[r] = int32(rt.Tokens[r])
		copy(out.TopK[r*s.Tokens*s.TopK:], rt.Idx[r])
		copy(out.Weights[r*s.Tokens*s.TopK:], rt.Weights[r])
	}
	out.Expected = append([]int32(nil), rt.LL().Counts...)
	return out
}

// RankStats is one rank's receiver-ready time over the repetitions, µs.
type RankStats struct {
	Mean float64 `json:"mean_us"`
	Min  float64 `json:"min_us"`
	Max  float64 `json:"max_us"`
}

// PhaseStats summarizes one phase over ranks and repetitions. Summaries
// are over ranks of each rank's mean over the repetitions, µs.
type PhaseStats struct {
	Ready     moe.Summary `json:"ready_us"`
	IssueDone moe.Summary `json:"issue_done_us"`
	SendDone  moe.Summary `json:"send_done_us"`
	WaitDone  moe.Summary `json:"wait_done_us"`
	// KernelUs is the launch's CUDA-event time, mean over repetitions.
	KernelUs float64 `json:"kernel_us"`
	// PostNs is the mean issue time of one post (posting lane's clock).
	PostNs float64 `json:"post_ns"`
	// Posts and Copies per repetition, summed over ranks.
	Posts  int64 `json:"posts"`
	Copies int64 `json:"copies"`
	// AlgoGBps is DeepEP's algorithm bandwidth: each rank's valid
	// selections × message bytes over its ready time, averaged.
	AlgoGBps float64     `json:"algo_gbps"`
	Ranks    []RankStats `json:"ranks"`
}

// Measurement is one native layer run.
type Measurement struct {
	Config   native.LayerConfig `json:"config"`
	Device   native.DeviceInfo  `json:"device"`
	Result   native.LayerResult `json:"result"`
	Dispatch PhaseStats         `json:"dispatch"`
	Combine  PhaseStats         `json:"combine"`
}

// Run plans and runs rt over tr on the library and summarizes it. A run
// whose checks fail returns the measurement with an error wrapping
// native.ErrCheck.
func Run(lib Runner, rt *moe.Routing, tr Transport, o Options, bg moe.Background) (*Measurement, error) {
	return run(lib, rt, tr, o, bg, lib.Layer)
}

// run is Run with the call that runs the planned layer.
func run(lib Runner, rt *moe.Routing, tr Transport, o Options, bg moe.Background, call func(native.LayerConfig, native.LayerRouting) (native.LayerResult, error)) (*Measurement, error) {
	dev := lib.Device()
	cfg, err := Plan(rt, tr, o, dev, bg)
	if err != nil {
		return nil, err
	}
	if cfg.GPUs > 1 {
		if err := haveGPUs(lib, cfg.GPUs); err != nil {
			return nil, err
		}
	}
	res, err := call(cfg, Flatten(rt))
	if err != nil && !errors.Is(err, native.ErrCheck) {
		return nil, fmt.Errorf("native layer over %s: %w", tr.Name(), err)
	}
	m := &Measurement{Config: cfg, Device: dev, Result: res}
	s := rt.Shape
	if cfg.Normal {
		d, c := NormalBytes(rt)
		m.Dispatch = summarize(res, 0, d)
		m.Combine = summarize(res, 1, c)
	} else {
		l := rt.LL()
		m.Dispatch = summarize(res, 0, llBytes(l, s.LLDispatchBytes()))
		m.Combine = summarize(res, 1, llBytes(l, s.LLCombineBytes()))
	}
	if err != nil {
		return m, fmt.Errorf("native layer over %s: %w", tr.Name(), err)
	}
	return m, nil
}

// NormalBytes is what DeepEP's normal-mode benchmark counts per rank: the
// tokens a rank receives in dispatch (hidden in the dispatch dtype plus
// scales) and, in combine, the tokens it sent, coming back in BF16: what
// each rank receives of the all-to-all bytes.
func NormalBytes(rt *moe.Routing) (dispatch, combine []int64) {
	d, c := A2ABytes(rt, true)
	return received(d), received(c)
}

// received sums a [src][dst] byte matrix per destination.
func received(m [][]int64) []int64 {
	out := make([]int64, len(m))
	for _, row := range m {
		for dst, b := range row {
			out[dst] += b
		}
	}
	return out
}

func llBytes(l *moe.LLLayout, msg int) []int64 {
	out := make([]int64, l.Shape.Ranks)
	for r := range out {
		out[r] = int64(l.Start[r+1]-l.Start[r]) * int64(msg)
	}
	return out
}

func summarize(res native.LayerResult, ph int, bytes []int64) PhaseStats {
	var st PhaseStats
	if len(res.Times) == 0 {
		return st
	}
	ranks := len(res.Times[0][ph])
	reps := float64(len(res.Times))
	ready := make([]float64, ranks)
	issue := make([]float64, ranks)
	send := make([]float64, ranks)
	wait := make([]float64, ranks)
	st.Ranks = make([]RankStats, ranks)
	var posts, postNs float64
	for r := range ranks {
		rs := RankStats{Min: math.Inf(1), Max: math.Inf(-1)}
		for _, rep := range res.Times {
			x := rep[ph][r]
			us := x.ReadyNs / 1e3
			rs.Mean += us / reps
			rs.Min = min(rs.Min, us)
			rs.Max = max(rs.Max, us)
			issue[r] += x.IssueDoneNs / 1e3 / reps
			send[r] += x.SendDoneNs / 1e3 / reps
			wait[r] += x.WaitDoneNs / 1e3 / reps
			posts += float64(x.Posts)
			postNs += x.PostNs
			st.Posts += x.Posts
			st.Copies += x.Copies
		}
		ready[r] = rs.Mean
		st.Ranks[r] = rs
	}
	for _, rep := range res.Times {
		st.KernelUs += rep[ph][0].KernelNs / 1e3 / reps
	}
	st.Posts /= int64(reps)
	st.Copies /= int64(reps)
	if posts > 0 {
		st.PostNs = postNs / posts
	}
	st.Ready = moe.Summarize(ready)
	st.IssueDone = moe.Summarize(issue)
	st.SendDone = moe.Summarize(send)
	st.WaitDone = moe.Summarize(wait)
	var algo float64
	n := 0
	for r, us := range ready {
		if us > 0 && r < len(bytes) {
			algo += float64(bytes[r]) / (us * 1e3)
			n++
		}
	}
	if n > 0 {
		st.AlgoGBps = algo / float64(n)
	}
	return st
}
