package hw

import (
	"testing"

	"moebench/sim"
)

// Two warps ask for a copy of 1,000 B at once on a GPU of 1 GB/s
// (1,000 ns for the bytes) with warps of 10 GB/s (100 ns) after a 50 ns
// round trip: the second is served after the first, and its own round
// trips wait out a share of that queue.
func TestMemoryCopyQueue(t *testing.T) {
	t.Parallel()
	const us = sim.Time(1e6) // ps
	cases := []struct {
		name       string
		perGPU     int
		wait       float64
		a, b       int // the two warps' ranks
		peer       bool
		first, sec sim.Time // when each copy is done, ps
	}{
		{"one rank: the GPU's bandwidth binds", 1, 0, 0, 0, false, 1 * us, 2 * us},
		{"ranks on GPUs of their own take nothing from each other", 1, 1, 0, 1, false, 1 * us, 1 * us},
		{"ranks sharing a GPU share its bandwidth", 2, 0, 0, 1, false, 1 * us, 2 * us},
		{"a copy to a peer rank takes the same bandwidth", 2, 0, 0, 1, true, 1 * us, 2 * us},
		// The second copy is served at 1 µs; its round trips and bytes
		// (150 ns) follow the whole wait and still end before the
		// bandwidth has carried it.
		{"round trips after the whole wait, the bandwidth binding", 1, 1, 0, 0, false, 1 * us, 2 * us},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := NewMemory(2, c.perGPU, 1, 10, 50e3)
			m.SetQueueWait(c.wait)
			first := m.WarpCopy(c.a, 0, 1000)
			var sec sim.Time
			if c.peer {
				sec = m.PeerCopy(c.b, 0, 1000, 50e3, 10.0/1000)
			} else {
				sec = m.WarpCopy(c.b, 0, 1000)
			}
			if first != c.first || sec != c.sec {
				t.Errorf("done at %v and %v, want %v and %v", first, sec, c.first, c.sec)
			}
		})
	}
}

// A warp's own latency shows only once the bandwidth no longer binds: on a
// fast GPU the copy that queued behind another finishes its round trips
// after the share of the wait it waits out.
func TestMemoryQueueWaitShare(t *testing.T) {
	t.Parallel()
	cases := []struct {
		wait float64
		want sim.Time // the second copy's end, ps
	}{
		{0, 150e3},   // round trips overlap the 10 ns queue
		{0.5, 155e3}, // half of it first
		{1, 160e3},   // all of it first
	}
	for _, c := range cases {
		m := NewMemory(1, 1, 100, 10, 50e3) // 1,000 B: 10 ns of bandwidth, 150 ns of warp
		m.SetQueueWait(c.wait)
		m.WarpCopy(0, 0, 1000)
		if got := m.WarpCopy(0, 0, 1000); got != c.want {
			t.Errorf("wait share %g: second copy done at %v, want %v", c.wait, got, c.want)
		}
	}
}
