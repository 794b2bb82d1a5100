package hw

import (
	"testing"

	"moebench/profile"
	"moebench/sim"
)

func TestNVLinkWireBytes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		bytes, want int64
	}{
		{"nothing", 0, 0},
		{"one byte is a packet", 1, 33},
		{"one full packet", 128, 160},
		{"a byte past it opens a second", 129, 129 + 64},
		{"an FP8 LL message", 7408, 7408 + 58*32},
	} {
		if got := NVLinkWireBytes(c.bytes); got != c.want {
			t.Errorf("%s: NVLinkWireBytes(%d) = %d, want %d", c.name, c.bytes, got, c.want)
		}
	}
}

// A stream of full packets holds the port for 5/4 of its bytes at the
// line rate: an H800's 200 GB/s carries an SM's copies at 160.
func TestNVLinkCopiesMoveAtFourFifthsOfTheLineRate(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-h800")
	n := NewNVLink(p, true, 8, 8, nil)
	var costs GPUCosts
	var sm SM
	const copies, bytes = 1000, 1 << 20
	var last sim.Time
	for range copies {
		th := NewThread(&costs, &sm)
		_, vis := n.Copy(&th, bytes, 0, 1)
		last = max(last, vis-n.latency)
	}
	gbs := float64(copies*bytes) / last.NsF()
	if want := p.Get("nvlink.gbs") * 0.8; gbs < want*0.999 || gbs > want*1.001 {
		t.Fatalf("%d MiB copies moved at %.1f GB/s, want %.1f (4/5 of nvlink.gbs)", copies, gbs, want)
	}
}

// A release after a copy to a peer waits for the stores to land there,
// then pays its own cost.
func TestNVLinkReleaseWaitsForTheStoresToLand(t *testing.T) {
	t.Parallel()
	p := profile.MustLoad("p-h800")
	n := NewNVLink(p, true, 8, 8, nil)
	costs := NewGPUCosts(p)
	var sm SM
	th := NewThread(&costs, &sm)
	_, visible := n.Copy(&th, 7408, 0, 1)
	if th.T >= visible {
		t.Fatalf("the copy holds its warp until %v, past the bytes' landing at %v", th.T, visible)
	}
	th.Fence(costs.FenceGPU)
	if want := visible + costs.FenceGPU; th.T != want {
		t.Fatalf("a release after the copy ends at %v, want the landing %v plus the fence's %v", th.T, visible, costs.FenceGPU)
	}
}
