package moe_test

import (
	"testing"

	"moebench/moe"
)

// The estimate grows with every term and does not overflow on shapes far
// beyond any machine.
func TestEstimateCost(t *testing.T) {
	t.Parallel()
	s := moe.Shape{Experts: 256, TopK: 8, Tokens: 128, Ranks: 16, GPUsPerNode: 8, Hidden: 7168, Dispatch: moe.FP8, Combine: moe.BF16}
	base := moe.EstimateCost(s, moe.Queues{QPs: 1024})
	// moebench run --transport mini-gda at these defaults peaks near 60 MiB.
	if base.Bytes < 60<<20 || base.Bytes > 120<<20 {
		t.Errorf("default layer: %d MiB", base.Bytes>>20)
	}
	if base.Messages != 2*16*128*8 {
		t.Errorf("messages %d", base.Messages)
	}
	more := s
	more.Tokens *= 8
	if c := moe.EstimateCost(more, moe.Queues{QPs: 1024}); c.Bytes <= base.Bytes {
		t.Errorf("8× tokens: %d B, not above %d B", c.Bytes, base.Bytes)
	}
	if c := moe.EstimateCost(s, moe.Queues{QPs: 1024, Rings: 1 << 20}); c.Bytes < base.Bytes+1<<30 {
		t.Errorf("a million rings: %d B", c.Bytes)
	}
	huge := moe.Shape{Experts: 1 << 20, TopK: 8, Tokens: 1 << 20, Ranks: 1 << 20}
	if c := moe.EstimateCost(huge, moe.Queues{QPs: 1 << 62, Rings: 1 << 62}); c.Bytes <= 0 || c.Messages <= 0 {
		t.Errorf("overflowed: %+v", c)
	}
}
