package hw

import (
	"fmt"

	"moebench/profile"
)

// FabricNote describes p's fabric for a result header, or "" for the
// reference: one non-blocking switch with a NIC per GPU. Only a
// leaf/spine fabric reads the NIC's other constants (its radix, hops and
// routing), so a header reads no constant the fabric does not use.
func FabricNote(p *profile.Profile) string {
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
	t := NewNICParams(p).Topo
	down, up := t.Ports()
	routing := "static ECMP"
	if t.Adaptive {
		routing = "adaptive routing"
	}
	return fmt.Sprintf("fabric: rail-optimized leaf/spine, %d-port leaves (%d NIC ports, %d uplinks), %s, %v a hop; %s",
		t.LeafRadix, down, up, routing, t.Hop, share)
}
