package moe

import (
	"testing"
	"unsafe"
)

// A large LL layer pools millions of warps (16.8 million in dispatch at
// 4,096 ranks): each is its transport.Warp and the workload's state, one
// cache line, so that a post touching a cold warp misses once, not twice;
// the README quotes its 64 bytes.
func TestLLWarpSize(t *testing.T) {
	if n := unsafe.Sizeof(pooled[llWarp]{}); n != 64 {
		t.Fatalf("a pooled LL warp is %d bytes, want 64", n)
	}
}

// Combine keeps a warp group per (rank, SM, group), 16.8 million at 4,096
// ranks; the README quotes its 16 bytes.
func TestLLGroupSize(t *testing.T) {
	if n := unsafe.Sizeof(llGroup{}); n != 16 {
		t.Fatalf("a combine warp group is %d bytes, want 16", n)
	}
}
