package moe

import (
	"fmt"
	"testing"
	"unsafe"

	"moebench/internal/readme"
)

// docSays fails t unless docs/performance.md says claim.
func docSays(t *testing.T, claim string) {
	t.Helper()
	readme.Says(t, "../docs/performance.md", claim)
}

// A large LL layer pools millions of warps (16.8 million in dispatch at
// 4,096 ranks): each is its transport.Warp and the workload's state, one
// cache line, so that a post touching a cold warp misses once, not twice;
// docs/performance.md quotes its 64 bytes.
func TestLLWarpSize(t *testing.T) {
	n := unsafe.Sizeof(pooled[warpState]{})
	if n != 64 {
		t.Fatalf("a pooled LL warp is %d bytes, want 64", n)
	}
	docSays(t, fmt.Sprintf("an LL warp is %d bytes with its transport state (one cache line)", n))
}

// Combine keeps a warp group per (rank, SM, group), 16.8 million at 4,096
// ranks; docs/performance.md quotes its 16 bytes.
func TestLLGroupSize(t *testing.T) {
	n := unsafe.Sizeof(llGroup{})
	if n != 16 {
		t.Fatalf("a combine warp group is %d bytes, want 16", n)
	}
	docSays(t, fmt.Sprintf("a combine warp group is %d bytes", n))
}
