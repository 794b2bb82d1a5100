package prefetch_test

import (
	"testing"
	"unsafe"

	"moebench/internal/prefetch"
)

// A prefetch reads nothing into the program and writes nothing.
func TestLineChangesNothing(t *testing.T) {
	a := make([]int64, 1<<16)
	for i := range a {
		a[i] = int64(i)
	}
	for i := range a {
		prefetch.Line(unsafe.Pointer(&a[(i*7919)%len(a)]))
	}
	for i, v := range a {
		if v != int64(i) {
			t.Fatalf("a[%d] = %d after prefetches", i, v)
		}
	}
}

func BenchmarkLine(b *testing.B) {
	b.ReportAllocs()
	a := make([]int64, 1<<20)
	i := 0
	for b.Loop() {
		prefetch.Line(unsafe.Pointer(&a[i]))
		i = (i + 4099) & (len(a) - 1)
	}
}
