package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"moebench/moe"
	"moebench/profile"
	"moebench/sweep"
)

// computeFlags put the experts' compute into the layer: --overlap names
// the schedule (and turns compute on), --layers repeats the layer into a
// decode or prefill step.
type computeFlags struct {
	overlap string
	layers  int
	scheds  []moe.Overlap // parsed; none when --overlap is not given
	one     bool          // the command takes one schedule
}

const overlapHelp = "put the experts' compute into the layer (grouped GEMMs of the workload's FFN on the tokens each rank receives, the shared expert on its own) and overlap it with communication: " +
	"none (one after another), shared-expert (the shared expert beside dispatch), two-batch (two micro-batches, one's communication beside the other's compute) or hook (two-batch with DeepEP's low-latency receive hook: receiving takes no SM); default: communication alone"

func (c *computeFlags) register(fs *pflag.FlagSet) {
	c.layers = 1
	fs.StringVar(&c.overlap, "overlap", "", overlapHelp+"; several, comma-separated, model the layer once for all of them")
	fs.IntVar(&c.layers, "layers", 1, "with --overlap: MoE layers in a step (a decode or prefill step's, the same routing each), for step time and tokens per second per GPU")
}

// registerOverlap adds --overlap alone, taking one schedule: replay's
// layers are its trace's, and size compares under one.
func (c *computeFlags) registerOverlap(fs *pflag.FlagSet) {
	c.layers, c.one = 1, true
	fs.StringVar(&c.overlap, "overlap", "", overlapHelp)
}

// check parses the flags.
func (c *computeFlags) check(fs *pflag.FlagSet) error {
	if fs.Changed("overlap") {
		var err error
		if c.scheds, err = sweep.Schedules(c.overlap, c.one); err != nil {
			return inputErr(err)
		}
	}
	switch {
	case fs.Changed("layers") && len(c.scheds) == 0:
		return fmt.Errorf("%w: --layers: only with --overlap (a step needs the experts' compute)", errUsage)
	case c.layers < 1 || c.layers > 1000:
		return fmt.Errorf("%w: --layers %d: want 1 to 1,000", errUsage, c.layers)
	}
	return nil
}

// of is the compute the flags ask for of workload's experts.
func (c *computeFlags) of(workload string) sweep.Compute {
	return sweep.Compute{Workload: workload, Scheds: c.scheds, Layers: c.layers}
}

// config is the compute of workload's experts on prof for a layer of
// shape in mode, or nil when --overlap is not given.
func (c *computeFlags) config(workload string, s moe.Shape, mode moe.Mode, prof *profile.Profile) (*moe.ComputeConfig, error) {
	cc, err := c.of(workload).Config(s, mode, prof)
	return cc, inputErr(err)
}

// note is the header's account of the compute, none without --overlap.
func (c *computeFlags) note(workload string) []string { return c.of(workload).Note() }
