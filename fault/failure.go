package fault

import (
	"errors"
	"fmt"

	"moebench/sim"
)

// ErrFailed marks a layer that did not complete under its faults
// (errors.Is); Failure says where and why.
var ErrFailed = errors.New("layer failed under faults")

// Failure is why a layer did not complete: a queue that went into error
// after its last retransmission, or a proxy that gave up on a work
// request, reported as the libraries report it (the completion status
// and the queue it came from).
type Failure struct {
	Mechanism  string
	Rank, Peer int // the sending rank and the one it sent to
	NIC, QP    int // the sender's NIC and queue
	// At is when the queue went into error (or the proxy gave up), from
	// the phase's start.
	At sim.Time
	// Retries is how many times the lost packet was sent again.
	Retries int
	// Status is the completion status the library sees, as ibverbs or
	// libfabric names it (IBV_WC_RETRY_EXC_ERR, FI_ETIMEDOUT).
	Status string
	// Reason says what ran out, in words.
	Reason string
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s: rank %d's queue %d on NIC %d to rank %d failed at %s with %s after %d retransmissions: %s",
		f.Mechanism, f.Rank, f.QP, f.NIC, f.Peer, f.At, f.Status, f.Retries, f.Reason)
}

// Is makes errors.Is(err, ErrFailed) hold.
func (f *Failure) Is(target error) bool { return target == ErrFailed }
