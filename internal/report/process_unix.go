//go:build unix

package report

import (
	"errors"
	"syscall"
)

// processGone reports whether no process pid exists: signal 0 checks
// without sending anything. A process of another user (EPERM) exists.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
