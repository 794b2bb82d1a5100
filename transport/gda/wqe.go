package gda

import (
	"fmt"

	"moebench/hw"
	"moebench/internal/field"
)

// Ordering is what the submitting thread does to make its WQE and doorbell
// record stores visible before the doorbell store (Table 4).
type Ordering int

// The ordering modes of Table 4.
const (
	OrderNone        Ordering = iota // unsafe control: plain stores
	OrderGPUFence                    // fence.acq_rel.gpu before the doorbell (DOCA, GDAKI)
	OrderFencedDBRec                 // a GPU-scope fence before the doorbell record too
	OrderReleaseGPU                  // st.release.gpu doorbell (DeepEP)
	OrderThreadFence                 // __threadfence() before dbrec and doorbell (NVSHMEM)
	OrderReleaseSys                  // st.release.sys
	OrderFenceSys                    // __threadfence_system()
)

var orderingNames = []string{"none", "gpu-fence", "fenced-dbrec", "release-gpu", "threadfence", "release-sys", "fence-sys"}

// OrderingModes lists the modes in Table 4's order.
func OrderingModes() []Ordering {
	return []Ordering{OrderNone, OrderGPUFence, OrderFencedDBRec, OrderReleaseGPU, OrderThreadFence, OrderReleaseSys, OrderFenceSys}
}

func (o Ordering) String() string {
	if int(o) < len(orderingNames) {
		return orderingNames[o]
	}
	return "ordering?"
}

// ParseOrdering reads a mode name.
func ParseOrdering(s string) (Ordering, bool) {
	for i, n := range orderingNames {
		if n == s {
			return Ordering(i), true
		}
	}
	return 0, false
}

// WQE sizes from Fig. 2: 16 B segments packed into 64 B basic blocks.
const (
	segBytes       = 16
	basicBlock     = 64
	inlineHdrBytes = 4 // the inline segment's byte-count word
)

// The largest send WQE a ConnectX adapter takes, which bounds what one
// write inlines: 16 basic blocks of 64 B (MLX5_SEND_WQE_MAX_WQEBBS in
// Linux's include/linux/mlx5/qp.h), and 63 16 B segments, what the ctrl
// segment's 6-bit ds count holds (mlx5 PRM, ctrl segment).
const (
	MaxWQEBBs = 16
	MaxWQEDS  = 63
)

// CheckWrite reports a write the NIC cannot carry: no payload, a payload
// beyond the largest message, or an inline payload whose WQE outgrows the
// largest send WQE (a DC one, with its address vector, the tighter).
// Every experiment of this package checks its writes with it.
func CheckWrite(payload int, inline bool) error {
	if err := writeProblem(payload, inline); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	return nil
}

// CheckPayload is CheckWrite of a payload the caller was given: its error
// names the field (payload).
func CheckPayload(payload int, inline bool) error {
	if err := writeProblem(payload, inline); err != nil {
		return &field.Error{Field: "payload", Err: err}
	}
	return nil
}

// writeProblem is what CheckWrite reports, without the field.
func writeProblem(payload int, inline bool) error {
	switch {
	case payload < 1:
		return fmt.Errorf("%d B, want at least 1", payload)
	case payload > hw.MaxMsgBytes:
		return fmt.Errorf("%d B, more than the %d B one message carries (InfiniBand's largest message is 2^31 B)", payload, int64(hw.MaxMsgBytes))
	case inline && WriteLayout(payload, true, avBytes).BBs > MaxWQEBBs:
		return fmt.Errorf("%d B inline makes a WQE of %d basic blocks, more than the %d (%d B) a send WQE holds; name it by pointer instead",
			payload, WriteLayout(payload, true, avBytes).BBs, MaxWQEBBs, MaxWQEBBs*basicBlock)
	case inline && WriteLayout(payload, true, avBytes).Segments > MaxWQEDS:
		return fmt.Errorf("%d B inline makes a WQE of %d segments, more than the %d its ds count holds; name it by pointer instead",
			payload, WriteLayout(payload, true, avBytes).Segments, MaxWQEDS)
	}
	return nil
}

// Layout is the shape of one RDMA-write WQE.
type Layout struct {
	Segments int // 16 B segments the thread stores
	BBs      int // 64 B basic blocks the NIC fetches
	// Loads counts the 16 B source chunks the thread must load to inline
	// the payload. The first chunk's 12 B ride in registers (the 8 B
	// values NVSHMEM, GDAKI and DeepEP inline are passed by value).
	Loads int
}

// WriteLayout returns the layout of an RC (or DC, with av) RDMA write whose
// payload is inlined when inline is true: ctrl + [address vector] + raddr +
// either one data (pointer) segment or the inline word and payload rounded
// up to 16 B.
func WriteLayout(payload int, inline bool, avBytes int) Layout {
	segs := 2 + (avBytes+segBytes-1)/segBytes
	loads := 0
	if inline {
		chunks := (inlineHdrBytes + payload + segBytes - 1) / segBytes
		segs += chunks
		loads = chunks - 1
	} else {
		segs++
	}
	return Layout{Segments: segs, BBs: (segs*segBytes + basicBlock - 1) / basicBlock, Loads: loads}
}
