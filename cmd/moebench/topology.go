package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"moebench/profile"
)

const topologyUsage = "fabric: switch (every NIC on one non-blocking switch, P-IB's), leaf-spine (rail-optimized two tiers, the profile's routing), leaf-spine:ecmp or leaf-spine:adaptive; radix, oversubscription, hops and GPUs per NIC are topo.* constants (--set)"

// registerTopology adds --topology to a command whose profile it shapes.
func (p *profileFlags) registerTopology(fs *pflag.FlagSet) {
	fs.StringVar(&p.topology, "topology", "", topologyUsage)
}

// applyTopology sets the topo.* constants --topology names
// (profile.SetTopology), before any --set (which may then refine them).
func (p *profileFlags) applyTopology(prof *profile.Profile) error {
	if p.topology == "" {
		return nil
	}
	if err := prof.SetTopology(p.topology, "--topology "+p.topology); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}
