package sim

import "testing"

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
