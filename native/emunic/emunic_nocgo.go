//go:build !cgo

package emunic

// Buffer is unusable without cgo.
type Buffer struct{ n int }

// Alloc returns Go memory's stand-in; Drain cannot use it.
func Alloc(n int) *Buffer { return &Buffer{n: n} }

// Bytes is empty without cgo.
func (b *Buffer) Bytes() []byte { return nil }

// Addr is 0 without cgo.
func (b *Buffer) Addr() uint64 { return 0 }

// Free does nothing.
func (b *Buffer) Free() {}

// Drain cannot run without cgo.
func (q *Queue) Drain([8]byte, []Region) (int, Status) { return 0, NotReady }
