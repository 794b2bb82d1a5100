package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"moebench/moe"
	"moebench/sweep"
	"moebench/workloads"
)

// groupFlags are the group-limited gating knobs of run, sweep and replay.
type groupFlags struct {
	topk   int
	groups int
}

func (g *groupFlags) register(fs *pflag.FlagSet, what string) {
	fs.IntVar(&g.topk, "topk-groups", 0, what+": expert groups a token may use, DeepSeek-V3's topk_group (default the workload's: 4 for deepseek-v3, none for the others; 0 = no limit)")
	fs.IntVar(&g.groups, "expert-groups", 0, "expert groups of consecutive ids, DeepSeek-V3's n_group (default the workload's, else one per node)")
}

// limit is the group limit the flags ask for over workload w: the
// workload's own unless --topk-groups or --expert-groups is given.
func (g *groupFlags) limit(fs *pflag.FlagSet, w workloads.Workload) (moe.GroupLimit, error) {
	var topk, groups *int
	if fs.Changed("topk-groups") {
		topk = &g.topk
	}
	if fs.Changed("expert-groups") {
		groups = &g.groups
	}
	lim, err := w.Groups.Over(topk, groups)
	if errors.Is(err, moe.ErrNoLimit) {
		return lim, fmt.Errorf("%w: %w (set --topk-groups)", errUsage, err)
	}
	if err != nil {
		return lim, fmt.Errorf("%w: %w", errUsage, err)
	}
	return lim, nil
}

// checkLimit resolves lim against shape s and names the flag at fault.
func checkLimit(lim moe.GroupLimit, s moe.Shape) error {
	if _, err := lim.Resolve(s); err != nil {
		return fmt.Errorf("%w: %w (shape: %d experts, top-%d, %d nodes; --topk-groups 0 lifts the limit)", errUsage, err, s.Experts, s.TopK, s.Nodes())
	}
	return nil
}

// describeLimit says which limit ran and where it came from.
func describeLimit(lim moe.GroupLimit, fs *pflag.FlagSet) string {
	from := "the workload's"
	if fs.Changed("topk-groups") || fs.Changed("expert-groups") {
		from = "--topk-groups"
	}
	if !lim.On() {
		return "no group limit"
	}
	return lim.String() + " (" + from + ")"
}

// groupLimit is run and sweep's limit, checked against every shape.
func (f *layerFlags) groupLimit(fs *pflag.FlagSet, points []sweep.Point) (moe.GroupLimit, error) {
	w, err := workloads.Get(f.workload)
	if err != nil {
		return moe.GroupLimit{}, fmt.Errorf("%w: --workload: %v", errUsage, err)
	}
	lim, err := f.groups.limit(fs, w)
	if err != nil {
		return moe.GroupLimit{}, err
	}
	for _, c := range points {
		if err := checkLimit(lim, c.Shape); err != nil {
			return moe.GroupLimit{}, err
		}
	}
	return lim, nil
}
