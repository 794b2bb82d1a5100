// Package hugepage backs the simulator's large, long-lived arrays with
// transparent huge pages where the kernel allows it. A layer of thousands
// of ranks holds gigabytes of slabs, warps and per-pair tables; faulting
// them in 4 KiB at a time cost about 3 s per GiB on a 2-core virtual
// machine (a third of a 1,024-rank run), 2 MiB pages about a third of
// that. The advice changes page size only, never contents or lifetime, so
// a kernel that ignores it (or another OS) gets the same results.
package hugepage

import "unsafe"

// Threshold is the size from which Make advises: below it a huge page
// would mostly hold memory the array never uses.
const Threshold = 4 << 20

// Make returns a zeroed slice of n values; when it spans Threshold or
// more, its memory is advised to be backed by huge pages as it is touched.
func Make[T any](n int) []T {
	s := make([]T, n)
	advise(s, false)
	return s
}

// MakeTouched is Make for an array the caller is about to fill whole: its
// pages are also populated in one call, cheaper than a fault per page.
func MakeTouched[T any](n int) []T {
	s := make([]T, n)
	advise(s, true)
	return s
}

// span is s's memory as an address range.
func span[T any](s []T) (uintptr, uintptr) {
	if len(s) == 0 {
		return 0, 0
	}
	var zero T
	return uintptr(unsafe.Pointer(&s[0])), uintptr(len(s)) * unsafe.Sizeof(zero)
}
