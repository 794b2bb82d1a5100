package emunic

import (
	"errors"
	"fmt"
)

// Status is what a drain ended with.
type Status int

// Drain outcomes: the C's MBN_WQE_* refusals, NotReady for a WQE not yet
// visible.
const (
	OK        Status = 0
	BadDS     Status = 1
	BadOpcode Status = 2
	BadInline Status = 3
	BadRKey   Status = 4
	BadLKey   Status = 5
	BadDest   Status = 6
	BadAlign  Status = 7
	NotReady  Status = -1
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case NotReady:
		return "not ready"
	case BadDS:
		return "bad ds"
	case BadOpcode:
		return "bad opcode"
	case BadInline:
		return "bad inline size"
	case BadRKey:
		return "remote key or range"
	case BadLKey:
		return "local key or range"
	case BadDest:
		return "no such destination"
	case BadAlign:
		return "unaligned atomic"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Region is what a key lets the NIC touch: the rank's registered buffer.
type Region struct {
	Buf *Buffer
	Key uint32
}

// Queue is one send queue as the NIC sees it.
type Queue struct {
	SQ   *Buffer // ring of basic blocks, a power of two of them
	CQ   *Buffer // 64 B CQEs, a power of two of them; nil for none
	CI   uint32  // consumer index (basic blocks, free-running)
	CQPI uint32  // CQEs written
	DC   bool    // a DCI: each WQE's address vector names the destination
	// EFA: an SRD queue of 64 B entries (native.EFAWrite), each naming
	// its destination rank as its address handle; CI counts entries and
	// the doorbell is the producer counter. Flags are writes with
	// immediate data, added to the 8 B word they name.
	EFA bool
	Src int // the rank that owns the queue
	Dst int // RC: the connected rank
	Cur int // DC: the DCI's current destination (-1 none)
	// Switches counts the DCI's changes of destination.
	Switches uint64
}

// ErrNoCgo is returned without cgo: the NIC's C cannot run.
var ErrNoCgo = errors.New("emunic: built without cgo")
