package sim

import (
	"testing"

	"moebench/internal/hugepage"
)

func TestSlabRecyclesAndKeepsPointers(t *testing.T) {
	var s Slab[[4]int64]
	idx := make([]int32, 10000)
	for i := range idx {
		idx[i] = s.Alloc()
		s.At(idx[i])[0] = int64(i)
	}
	p := s.At(idx[5])
	for range 10000 {
		s.Alloc() // growth must not move earlier slots
	}
	if p[0] != 5 || s.At(idx[9999])[0] != 9999 {
		t.Fatal("slots moved or lost their values")
	}
	s.Free(idx[3])
	if got := s.Alloc(); got != idx[3] || s.At(got)[0] != 0 {
		t.Fatalf("freed slot not reused zeroed: %d", got)
	}
	if s.Live() != 20000 {
		t.Fatalf("live %d", s.Live())
	}
	allocs := testing.AllocsPerRun(100, func() { s.Free(s.Alloc()) })
	if allocs != 0 {
		t.Fatalf("steady alloc/free allocates %v", allocs)
	}
}

// Freed slots come back last freed first, zeroed, whether the slab keeps
// its free stack in the slots (no pointers) or beside them; the first way
// allocates nothing however many slots are freed at once.
func TestSlabFreeStack(t *testing.T) {
	type plain struct {
		a int64
		b int32
	}
	type withPointer struct {
		p *int
		b int32
	}
	check := func(t *testing.T, alloc func() int32, free func(int32), live func() int, set func(int32), isZero func(int32) bool) {
		const n = 3 << slabShift
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = alloc()
			set(idx[i])
		}
		for _, i := range idx[:n/2] {
			free(i)
		}
		if live() != n-n/2 {
			t.Fatalf("live %d, want %d", live(), n-n/2)
		}
		for k := n/2 - 1; k >= 0; k-- {
			got := alloc()
			if got != idx[k] {
				t.Fatalf("realloc %d gave slot %d, want %d (last freed first)", n/2-1-k, got, idx[k])
			}
			if !isZero(got) {
				t.Fatalf("slot %d came back unzeroed", got)
			}
		}
		if next := alloc(); next != n {
			t.Fatalf("with none free, the next slot is %d, want %d", next, n)
		}
	}
	t.Run("in the slots", func(t *testing.T) {
		var s Slab[plain]
		check(t, s.Alloc, s.Free, s.Live, func(i int32) { *s.At(i) = plain{a: int64(i) + 1, b: 7} },
			func(i int32) bool { return *s.At(i) == plain{} })
		if s.mode != slabIntrusive {
			t.Fatalf("a slab of %T keeps its free stack apart", plain{})
		}
		idx := make([]int32, 1<<20)
		for i := range idx {
			idx[i] = s.Alloc()
		}
		if allocs := testing.AllocsPerRun(1, func() {
			for _, i := range idx {
				s.Free(i)
			}
			for range idx {
				s.Alloc()
			}
		}); allocs != 0 {
			t.Fatalf("freeing a million slots allocated %v times", allocs)
		}
	})
	t.Run("beside them", func(t *testing.T) {
		var s Slab[withPointer]
		x := 1
		check(t, s.Alloc, s.Free, s.Live, func(i int32) { *s.At(i) = withPointer{p: &x, b: 7} },
			func(i int32) bool { return *s.At(i) == withPointer{} })
		if s.mode != slabListed {
			t.Fatalf("a slab of %T writes indices over its pointers", withPointer{})
		}
	})
}

// A slab that took batches and empties gives them back and fills again
// from slot 0, zeroed, in the chunks it kept; one that never took a batch
// keeps its free stack.
func TestSlabEmptiesAndRefills(t *testing.T) {
	const n = (batchAfter + 3) << slabShift
	var s Slab[[2]int64]
	for range 2 {
		idx := make([]int32, n)
		for i := range idx {
			idx[i] = s.Alloc()
			if idx[i] != int32(i) {
				t.Fatalf("slot %d handed out as %d", i, idx[i])
			}
			*s.At(idx[i]) = [2]int64{int64(i) + 1, 7}
		}
		if s.maps.Held() == 0 || hugepage.MappedBytes() == 0 {
			t.Fatal("no batch mapped")
		}
		for _, i := range idx[1:] {
			s.Free(i)
		}
		if s.maps.Held() == 0 || s.Live() != 1 {
			t.Fatalf("emptied with a slot live (live %d)", s.Live())
		}
		s.Free(idx[0])
		if s.maps.Held() != 0 || s.spare != nil || len(s.chunks) != batchAfter || s.Live() != 0 {
			t.Fatalf("after the last free: %d batches, %d spare, %d chunks, live %d", s.maps.Held(), len(s.spare), len(s.chunks), s.Live())
		}
		for i := range 3 << slabShift {
			if got := s.Alloc(); got != int32(i) || *s.At(got) != [2]int64{} {
				t.Fatalf("refill: slot %d came back as %d holding %v", i, got, *s.At(got))
			}
		}
		for i := range 3 << slabShift {
			s.Free(int32(i))
		}
		if s.Live() != 0 || s.nfree != 3<<slabShift {
			t.Fatalf("a slab without batches dropped its free slots: live %d, free %d", s.Live(), s.nfree)
		}
		for range 3 << slabShift {
			s.Alloc()
		}
		for i := range 3 << slabShift {
			s.Free(int32(i))
		}
		s = Slab[[2]int64]{}
	}
}

// A slab whose values hold pointers keeps its batches when it empties:
// given up, they would only wait for the collector while the next fill
// took new ones beside them.
func TestSlabOfPointersKeepsItsBatches(t *testing.T) {
	const n = (batchAfter + 3) << slabShift
	var s Slab[*int]
	x := new(int)
	for range n {
		*s.At(s.Alloc()) = x
	}
	chunks := len(s.chunks)
	for i := range n {
		s.Free(int32(i))
	}
	if len(s.chunks) != chunks || s.Live() != 0 {
		t.Fatalf("emptied: %d chunks of %d, live %d", len(s.chunks), chunks, s.Live())
	}
	for range n {
		if i := s.Alloc(); *s.At(i) != nil {
			t.Fatalf("slot %d refilled holding %p", i, *s.At(i))
		}
	}
	if len(s.chunks) != chunks {
		t.Fatalf("the refill took %d chunks, want the %d kept", len(s.chunks), chunks)
	}
}
