package hugepage

import (
	"fmt"
	"syscall"
	"unsafe"
)

func mapped[T any](n int, populate bool) []T {
	var zero T
	size := n * int(unsafe.Sizeof(zero))
	if size == 0 {
		return make([]T, n)
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// As make would when memory runs out.
		panic(fmt.Sprintf("hugepage: mapping %d bytes: %v", size, err))
	}
	s := unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
	advise(s, populate)
	return s
}

func unmap[T any](s []T) {
	_, n := span(s)
	if n == 0 {
		return
	}
	// syscall finds the mapping by the byte slice Mmap returned: the same
	// start and length.
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n)
	if err := syscall.Munmap(b); err != nil {
		panic(fmt.Sprintf("hugepage: unmapping %d bytes: %v", n, err))
	}
}
