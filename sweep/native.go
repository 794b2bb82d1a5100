package sweep

import (
	"errors"
	"fmt"
	"strconv"

	"go.uber.org/zap"

	"moebench/moe"
	"moebench/native"
	nativelayer "moebench/native/layer"
	"moebench/results"
	"moebench/transport/preset"
)

// Native is a run's or sweep's points on the native engine: each point
// through each layer path, measured, with the model's prediction beside
// it, and NCCL's all-to-all of the same routing beside them when asked.
type Native struct {
	Lib     nativelayer.Runner
	Points  []Point // each with the GPUs its ranks spread over
	Paths   []nativelayer.Transport
	NCCL    bool
	NCCLLib string              // NCCL's library, "" for the loader's
	Options nativelayer.Options // every point's; each takes its GPUs and mode
	Inputs  *Inputs
	Axes    []SetAxis
	Varies  func(name string) bool // as Sweep's, and gpus and virtual-ranks
	Log     *zap.Logger
}

// Measure runs every point through every path, in order; progress, when
// not nil, hears of each run by its path's name. A run that failed its
// checks is an item with its error, counted in failed; a run the library
// or the plan refuses is the caller's input.
func (n *Native) Measure(progress func(path string)) (items []results.NativeItem, nccl []results.NCCLItem, failed int, err error) {
	refused := func(err error) error {
		if errors.Is(err, nativelayer.ErrPlan) || errors.Is(err, native.ErrBadArgument) {
			return input(err)
		}
		return err
	}
	for _, c := range n.Points {
		rt, prof, err := n.Inputs.Of(c)
		if err != nil {
			return nil, nil, 0, err
		}
		o := n.Options
		o.GPUs, o.Mode = c.GPUs, c.Mode
		o = o.OnProfile(prof)
		swept := n.swept(c)
		for _, tr := range n.Paths {
			tr.Options = preset.OptionsOf(c.Knobs)
			m, model, checkErr, err := nativelayer.RunPredicted(n.Lib, rt, tr, o, c.Background, prof, n.Log)
			if err != nil {
				return nil, nil, 0, refused(err)
			}
			if checkErr != nil {
				failed++
			}
			items = append(items, results.NativeItem{Mode: c.Mode, Shape: c.Shape, QPsPerPeer: c.Knobs.Int("qps-per-peer"),
				Background: c.BackgroundName, Sets: c.Sets, Swept: swept, Path: tr, M: m, Model: model, Err: checkErr})
			if progress != nil {
				progress(tr.Name())
			}
		}
		if n.NCCL {
			st, err := nativelayer.RunNCCL(n.Lib, rt, o, n.NCCLLib)
			if err != nil {
				return nil, nil, 0, refused(err)
			}
			nccl = append(nccl, results.NCCLItem{Mode: c.Mode, Shape: c.Shape, GPUs: c.GPUs, Swept: swept, Stats: st})
		}
	}
	return items, nccl, failed, nil
}

// swept is point c's swept values: Swept's, after the ranks and GPUs
// where the placement varies.
func (n *Native) swept(c Point) []results.Knob {
	k := Swept(n.Varies, n.Axes, c)
	if n.Varies != nil && (n.Varies("gpus") || n.Varies("virtual-ranks")) {
		k = append([]results.Knob{{Name: "ranks", Value: strconv.Itoa(c.Shape.Ranks)}, {Name: "GPUs", Value: strconv.Itoa(c.GPUs)}}, k...)
	}
	return k
}

// DescribeNative is a header's account of a native run: the first
// point's layer, its routing and background, how the runs were placed and
// repeated, how normal mode runs, and how many points there were.
func DescribeNative(workload string, points []Point, spec moe.RoutingSpec, items []results.NativeItem) []string {
	s := points[0].Shape
	l := []string{
		fmt.Sprintf("workload %s: %d experts, top-%d, hidden %d, %d tokens/rank, %d ranks, %s dispatch, %s mode",
			workload, s.Physical(), s.TopK, s.Hidden, s.Tokens, s.Ranks, s.Dispatch, points[0].Mode),
		fmt.Sprintf("routing %s; background %s", spec, points[0].Background),
	}
	if len(items) > 0 {
		m := items[0].M
		l = append(l, fmt.Sprintf("%s; %d warm-up and %d timed repetitions, L2 flushed %v, every token checked %v",
			results.Placement(m), m.Config.Warmup, m.Config.Reps, m.Config.FlushL2, m.Config.Verify))
		if c := m.Config; c.Normal {
			l = append(l, fmt.Sprintf("normal mode as DeepEP's intranode kernels: %d channels (a sender and a receiver SM each), %d-token ring buffers per channel and peer, a tail every %d tokens; the count exchange runs inside the dispatch kernel (DeepEP's separate notify kernel and host wait are not measured)",
				c.SMsPerRank/2, c.BufTokens, c.Chunk))
		}
	}
	if len(points) > 1 {
		l = append(l, fmt.Sprintf("sweep: %d configurations (first shown above)", len(points)))
	}
	return l
}
