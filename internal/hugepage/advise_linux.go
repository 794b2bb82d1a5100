package hugepage

import "syscall"

const (
	madvHugepage      = 14 // MADV_HUGEPAGE
	madvPopulateWrite = 23 // MADV_POPULATE_WRITE, Linux 5.14
	hugeSize          = 2 << 20
)

// advise marks the 2 MiB-aligned interior of s for huge pages and, with
// populate, faults it in at once. Errors (an old kernel, THP disabled)
// leave ordinary pages, which is only slower.
func advise[T any](s []T, populate bool) {
	p, n := span(s)
	if n < Threshold {
		return
	}
	lo := (p + hugeSize - 1) &^ (hugeSize - 1)
	hi := (p + n) &^ (hugeSize - 1)
	if hi <= lo {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvHugepage)
	if populate {
		syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, madvPopulateWrite)
	}
}
