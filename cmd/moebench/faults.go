package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"moebench/fault"
	"moebench/sweep"
)

// faultFlags are the faults a layer runs under (run, sweep and replay),
// and sweep's tails over fault seeds. A layer that fails under its faults
// is a result, not an error: its phase's row says failed, the JSON holds
// the failure, stderr repeats it, and the exit status stays 0.
type faultFlags struct {
	specs            []string
	seed             uint64
	seeds            int       // sweep: fault seeds 1..seeds for every point
	loss             []float64 // sweep: packet loss on every link, an axis
	lossSet, seedSet bool
}

func (f *faultFlags) register(fs *pflag.FlagSet, sweep bool) {
	fs.StringArrayVar(&f.specs, "fault", nil, "a fault under the layer, `SPEC` (repeatable, or a comma list): "+fault.Syntax+
		"; loss and corrupt are per packet on one crossing of a link, slow makes one rank's kernels FACTOR times as long, link runs a rank's NIC links at FACTOR of their rate, flap takes them down AT for FOR, spine leaves FACTOR of the spine to the layer; a layer that fails under its faults is reported (its rows, a line on stderr, JSON failure) and exits 0")
	fs.Uint64Var(&f.seed, "fault-seed", 1, "seed of the faults' draws (which packets are lost): the same seed, the same run")
	if sweep {
		fs.IntVar(&f.seeds, "seeds", 0, "run every point with fault seeds 1..N and report, per point and phase, the p50, p99 and max over the seeds of the slowest rank's time, and how many seeds failed (needs --fault or --loss)")
		fs.Float64SliceVar(&f.loss, "loss", nil, "packet loss rates on every link to sweep, each with the --fault ones, e.g. 0,1e-5,1e-4")
	}
}

// check validates the flags once parsed: the specifications' syntax (the
// ranks they name are checked against each layer in expand).
func (f *faultFlags) check(fs *pflag.FlagSet) error {
	f.lossSet, f.seedSet = fs.Changed("loss"), fs.Changed("fault-seed")
	if err := f.of().Check(); err != nil {
		return inputErr(err)
	}
	switch {
	case fs.Changed("seeds") && f.seeds == 0:
		return fmt.Errorf("%w: --seeds 0: want 1 to %d", errUsage, sweep.MaxSeeds)
	case f.seeds > 0 && len(f.specs) == 0 && !f.lossSet:
		return fmt.Errorf("%w: --seeds: a healthy layer is deterministic, every seed the same; add --fault or --loss", errUsage)
	case f.seeds > 0 && fs.Changed("shard"):
		return fmt.Errorf("%w: --shard: tails over seeds are summed up in one process; run --seeds without --shard", errUsage)
	case f.seeds > 0 && f.seedSet:
		return fmt.Errorf("%w: --fault-seed: --seeds runs seeds 1 to %d; give one or the other", errUsage, f.seeds)
	}
	return nil
}

// of is the faults the flags ask for.
func (f *faultFlags) of() sweep.Faults {
	return sweep.Faults{Specs: f.specs, Loss: f.loss, Swept: f.lossSet, Seed: f.seed, Seeds: f.seeds}
}

// expand gives every point its faults (sweep.Faults.Expand).
func (f *faultFlags) expand(points []sweep.Point) ([]sweep.Point, error) {
	out, err := f.of().Expand(points)
	return out, inputErr(err)
}

// warnFailed tells stderr of each phase that failed under its faults.
func warnFailed(w io.Writer, command string, items []sweep.Item) {
	for _, f := range sweep.Failures(items) {
		fmt.Fprintf(w, "moebench %s: %v\n", command, f)
	}
}
