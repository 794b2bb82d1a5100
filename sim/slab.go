package sim

import (
	"reflect"
	"unsafe"

	"moebench/internal/hugepage"
)

// Slab stores values in fixed-size chunks and recycles freed slots, so
// that models holding a million in-flight messages neither copy them as
// the population grows nor allocate once it is steady. Indices stay valid
// until freed; pointers from At stay valid until the slot is freed.
//
// A slab of pointer-free values that empties gives its batches back (see
// Free): the NIC's queue states of a thousand-rank layer all live in its
// first microseconds and none after, while its messages and events keep
// growing for milliseconds, and memory kept for the first would add to
// their peak.
type Slab[T any] struct {
	chunks [][]T
	spare  [][]T // chunks cut from a batch, not yet in use
	// maps holds the batches the chunks past batchAfter were cut from,
	// mapped outside the Go heap, when T holds no pointers.
	maps hugepage.Mappings[T]
	n    int32 // slots handed out so far
	// Freed slots form a stack. When T holds no pointers, each freed slot
	// stores the index of the one freed before it, so the stack costs no
	// memory: a layer of thousands of ranks frees tens of millions of
	// messages, queue states and posts at the end of a burst, and a list
	// of their indices beside the slabs would be the phase's last and
	// largest allocation. A T with pointers keeps the list, since the
	// collector must never find an index where it expects a pointer.
	top   int32 // intrusive: the last freed slot + 1, 0 none
	nfree int
	free  freeList
	mode  uint8 // slabUnknown until the first Free
}

const (
	slabUnknown = iota
	slabIntrusive
	slabListed
)

// freeList is a stack of freed indices in chunks, so that a million frees
// in a row never copy the list to grow it.
type freeList struct {
	chunks [][]int32
	n      int
}

func (f *freeList) push(i int32) {
	if f.n>>slabShift == len(f.chunks) {
		f.chunks = append(f.chunks, make([]int32, 1<<slabShift))
	}
	f.chunks[f.n>>slabShift][f.n&(1<<slabShift-1)] = i
	f.n++
}

func (f *freeList) pop() int32 {
	f.n--
	return f.chunks[f.n>>slabShift][f.n&(1<<slabShift-1)]
}

const (
	slabShift = 12 // 4,096 values a chunk
	// A slab past batchAfter chunks takes new ones a huge-page batch at a
	// time: large simulations fault their slabs in 2 MiB pages.
	batchAfter = 8
	batchBytes = 32 << 20
)

// Alloc returns a zeroed slot's index.
func (s *Slab[T]) Alloc() int32 {
	if s.nfree > 0 {
		var i int32
		if s.mode == slabIntrusive {
			i = s.top - 1
			s.top = *(*int32)(unsafe.Pointer(s.At(i)))
		} else {
			i = s.free.pop()
		}
		s.nfree--
		var zero T
		*s.At(i) = zero
		return i
	}
	i := s.n
	if int(i>>slabShift) == len(s.chunks) {
		s.chunks = append(s.chunks, s.chunk())
	}
	s.n++
	return i
}

// chunk is a new chunk's storage.
func (s *Slab[T]) chunk() []T {
	if len(s.chunks) < batchAfter {
		return make([]T, 1<<slabShift)
	}
	if len(s.spare) == 0 {
		var zero T
		k := max(1, batchBytes/int(unsafe.Sizeof(zero))>>slabShift)
		var b []T
		if hugepage.HasPointers(reflect.TypeFor[T]()) {
			b = hugepage.Make[T](k << slabShift)
		} else {
			b = s.maps.Map(k << slabShift)
		}
		for j := range k {
			s.spare = append(s.spare, b[j<<slabShift:(j+1)<<slabShift:(j+1)<<slabShift])
		}
	}
	c := s.spare[0]
	s.spare = s.spare[1:]
	return c
}

// At returns the slot at index i.
func (s *Slab[T]) At(i int32) *T { return &s.chunks[i>>slabShift][i&(1<<slabShift-1)] }

// Free returns slot i for reuse. The last slot of a slab that mapped
// batches returns them to the system at once; the first chunks stay for
// the slab to fill again. A slab of values with pointers keeps its
// batches, which could go only to the collector: mini-gda's posts in
// progress empty and refill between a phase's waves of posts, and each
// refill took fresh batches while the last ones still waited as garbage
// (keeping them took the peak of 1,024 ranks x 16,384 experts in turn to
// 0.93x).
func (s *Slab[T]) Free(i int32) {
	if s.mode == slabUnknown {
		s.mode = slabListed
		var zero T
		fits := unsafe.Sizeof(zero) >= 4 && unsafe.Alignof(zero) >= 4
		if fits && !hugepage.HasPointers(reflect.TypeFor[T]()) {
			s.mode = slabIntrusive
		}
	}
	s.nfree++
	if s.nfree == int(s.n) && s.maps.Held() > 0 {
		s.empty()
		return
	}
	if s.mode == slabIntrusive {
		*(*int32)(unsafe.Pointer(s.At(i))) = s.top
		s.top = i + 1
		return
	}
	s.free.push(i)
}

// empty drops every slot and the batches, keeping the first chunks
// zeroed, as Alloc expects a slot never handed out to be.
func (s *Slab[T]) empty() {
	s.maps.UnmapAll()
	s.spare = nil
	clear(s.chunks[batchAfter:])
	s.chunks = s.chunks[:batchAfter]
	for _, c := range s.chunks {
		clear(c)
	}
	s.n, s.top, s.nfree = 0, 0, 0
	s.free = freeList{}
}

// Live counts slots in use.
func (s *Slab[T]) Live() int { return int(s.n) - s.nfree }
