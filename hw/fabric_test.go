package hw

import (
	"testing"

	"moebench/profile"
)

// The header's fabric line, against the run headers of p-ib's fabrics.
func TestFabricNote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{nil, ""},
		{[]string{"topo.gpus_per_nic=2"}, "fabric: one non-blocking switch, 2 GPUs per NIC"},
		{[]string{"topo.nics_per_gpu=4"}, "fabric: one non-blocking switch, 4 NICs per GPU"},
		{[]string{"topo.tiers=2", "topo.adaptive=1", "topo.planes_per_nic=2"},
			"fabric: rail-optimized leaf/spine, 64-port leaves (32 NIC ports, 32 uplinks), adaptive routing, 150ns a hop; one NIC per GPU of 2 planes each"},
		{[]string{"topo.tiers=2", "topo.leaf_radix=16", "topo.oversubscription=3"},
			"fabric: rail-optimized leaf/spine, 16-port leaves (12 NIC ports, 4 uplinks), static ECMP, 150ns a hop; one NIC per GPU"},
	} {
		p := profile.MustLoad("p-ib")
		if err := p.ApplySets(tc.sets); err != nil {
			t.Fatal(err)
		}
		if got := FabricNote(p); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.sets, got, tc.want)
		}
	}
}

// A single switch reads none of the NIC's constants beyond the
// topology's; a leaf/spine reads its radix.
func TestFabricNoteReads(t *testing.T) {
	t.Parallel()
	names := []string{"nic.doorbell_ns", "topo.leaf_radix"}
	p := profile.MustLoad("p-ib")
	FabricNote(p)
	if u := p.Unread(names); len(u) != 2 {
		t.Errorf("one switch: unread %v, want both", u)
	}
	p.ApplySets([]string{"topo.tiers=2"})
	FabricNote(p)
	if u := p.Unread(names); len(u) != 0 {
		t.Errorf("leaf/spine: unread %v, want none", u)
	}
}
