package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"moebench/hw"
	"moebench/internal/report"
	"moebench/profile"
)

const topologyUsage = "fabric: switch (every NIC on one non-blocking switch, P-IB's), leaf-spine (rail-optimized two tiers, the profile's routing), leaf-spine:ecmp or leaf-spine:adaptive; radix, oversubscription, hops and GPUs per NIC are topo.* constants (--set)"

// registerTopology adds --topology to a command whose profile it shapes.
func (p *profileFlags) registerTopology(fs *pflag.FlagSet) {
	fs.StringVar(&p.topology, "topology", "", topologyUsage)
}

// applyTopology sets the topo.* constants --topology names, before any
// --set (which may then refine them).
func (p *profileFlags) applyTopology(prof *profile.Profile) error {
	if p.topology == "" {
		return nil
	}
	vals, err := parseTopology(p.topology)
	if err != nil {
		return fmt.Errorf("%w: --topology: %v", errUsage, err)
	}
	for _, v := range vals {
		if err := prof.SetValue(v.name, v.value, "--topology "+p.topology); err != nil {
			return fmt.Errorf("--topology: %w", err)
		}
	}
	return nil
}

type topoValue struct {
	name  string
	value float64
}

// parseTopology reads KIND[:ROUTING]: switch, or leaf-spine with ecmp or
// adaptive routing (none: the profile's).
func parseTopology(s string) ([]topoValue, error) {
	kind, routing, hasRouting := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	switch kind {
	case "switch":
		if hasRouting {
			return nil, fmt.Errorf("%s: one switch has no routing to choose (want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive)", report.Quote(s))
		}
		return []topoValue{{"topo.tiers", 1}}, nil
	case "leaf-spine":
		out := []topoValue{{"topo.tiers", 2}}
		switch {
		case !hasRouting:
		case routing == "ecmp":
			out = append(out, topoValue{"topo.adaptive", 0})
		case routing == "adaptive":
			out = append(out, topoValue{"topo.adaptive", 1})
		default:
			return nil, fmt.Errorf("%s: routing %s: want ecmp or adaptive", report.Quote(s), report.Quote(routing))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: want switch, leaf-spine, leaf-spine:ecmp or leaf-spine:adaptive", report.Quote(s))
}

// topologyNote describes the fabric of base with sets applied (the first
// configuration's) for a result header, or "" for the reference single
// switch with a NIC per GPU.
func topologyNote(base *profile.Profile, sets []string) string {
	p, err := withSets(base, sets)
	if err != nil {
		return ""
	}
	tiers, g := int(p.Get("topo.tiers")), int(p.Get("topo.gpus_per_nic"))
	nics, planes := int(p.Get("topo.nics_per_gpu")), int(p.Get("topo.planes_per_nic"))
	if tiers < 2 && g <= 1 && nics <= 1 && planes <= 1 {
		return ""
	}
	share := fmt.Sprintf("%d GPUs per NIC", g)
	switch {
	case nics > 1:
		share = fmt.Sprintf("%d NICs per GPU", nics)
	case g <= 1:
		share = "one NIC per GPU"
	}
	if planes > 1 {
		share += fmt.Sprintf(" of %d planes each", planes)
	}
	if tiers < 2 {
		return "fabric: one non-blocking switch, " + share
	}
	t := hw.NewNICParams(p).Topo
	down, up := t.Ports()
	routing := "static ECMP"
	if t.Adaptive {
		routing = "adaptive routing"
	}
	return fmt.Sprintf("fabric: rail-optimized leaf/spine, %d-port leaves (%d NIC ports, %d uplinks), %s, %v a hop; %s",
		t.LeafRadix, down, up, routing, t.Hop, share)
}
