package proxy

import (
	"fmt"
	"testing"
	"unsafe"

	"moebench/internal/readme"
)

// A large layer keeps millions of op records in flight and a send queue
// per (worker, destination) that posts; docs/performance.md quotes both
// sizes.
func TestRecordSizes(t *testing.T) {
	op, q := unsafe.Sizeof(opRec{}), unsafe.Sizeof(sendQueue{})
	if op != 72 || q != 12 {
		t.Fatalf("an op record is %d bytes and a send queue %d, want 72 and 12", op, q)
	}
	readme.Says(t, "../../docs/performance.md",
		fmt.Sprintf("Its op record carries the op and links its send queue (%d bytes, in a slab)", op),
		fmt.Sprintf("a worker makes its queues when it first posts (%d bytes each, no slices)", q))
}
