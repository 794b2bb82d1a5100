package hugepage

import (
	"reflect"
	"runtime"
	"testing"
	"time"
)

func TestMakeIsZeroedAndSized(t *testing.T) {
	for _, n := range []int{0, 1, 1000, Threshold/8 + 3, 3 * Threshold / 8} {
		for name, mk := range map[string]func(int) []int64{"Make": Make[int64], "MakeTouched": MakeTouched[int64]} {
			s := mk(n)
			if len(s) != n {
				t.Fatalf("%s(%d): length %d", name, n, len(s))
			}
			for i, v := range s {
				if v != 0 {
					t.Fatalf("%s(%d): [%d] = %d, want 0", name, n, i, v)
				}
			}
			for i := range s {
				s[i] = int64(i)
			}
			if n > 0 && s[n-1] != int64(n-1) {
				t.Fatalf("%s(%d): lost a write", name, n)
			}
		}
	}
}

func BenchmarkTouch64MiB(b *testing.B) {
	const n = 64 << 20
	for name, mk := range map[string]func(int) []byte{"make": func(n int) []byte { return make([]byte, n) }, "Make": Make[byte], "MakeTouched": MakeTouched[byte]} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(n)
			for b.Loop() {
				s := mk(n)
				for i := 0; i < n; i += 4096 {
					s[i] = 1
				}
			}
		})
	}
}

func TestMappedIsZeroedAndGivenBack(t *testing.T) {
	before, total := MappedBytes(), MappedTotal()
	want := int64(0)
	for _, n := range []int{0, 1, 1000, 3 * Threshold / 8} {
		for _, mk := range []func(int) []int64{Mapped[int64], MappedTouched[int64]} {
			s := mk(n)
			if got := MappedBytes() - before; got != int64(8*n) {
				t.Fatalf("Mapped(%d): %d bytes counted, want %d", n, got, 8*n)
			}
			if len(s) != n {
				t.Fatalf("Mapped(%d): length %d", n, len(s))
			}
			for i, v := range s {
				if v != 0 {
					t.Fatalf("Mapped(%d): [%d] = %d, want 0", n, i, v)
				}
				s[i] = int64(i)
			}
			if n > 0 && s[n-1] != int64(n-1) {
				t.Fatalf("Mapped(%d): lost a write", n)
			}
			Unmap(s)
			if want += int64(8 * n); MappedTotal()-total != want {
				t.Fatalf("Mapped(%d): %d bytes counted in all, want %d", n, MappedTotal()-total, want)
			}
			if MappedBytes() != before {
				t.Fatalf("Mapped(%d): %d bytes still counted after Unmap", n, MappedBytes()-before)
			}
		}
	}
}

// An owner gives its arrays back at once; one dropped while holding some has them given back by the collector.
func TestMappingsGiveBack(t *testing.T) {
	before := MappedBytes()
	var m Mappings[int32]
	a, b := m.Map(1000), m.MapTouched(3000)
	if m.Held() != 2 || MappedBytes()-before != 4*4000 {
		t.Fatalf("holding %d arrays, %d bytes", m.Held(), MappedBytes()-before)
	}
	a[999], b[2999] = 1, 2
	m.UnmapAll()
	if m.Held() != 0 || MappedBytes() != before {
		t.Fatalf("after UnmapAll: %d arrays, %d bytes", m.Held(), MappedBytes()-before)
	}

	drop := func() {
		owner := &struct {
			pad  [64]byte
			mems Mappings[int64]
		}{}
		owner.mems.Map(1 << 16)
	}
	drop()
	for range 100 {
		if MappedBytes() == before {
			return
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("a dropped owner's %d bytes were never given back", MappedBytes()-before)
}

func TestMappedRefusesPointers(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Mapped of a type with pointers did not panic")
		}
	}()
	Mapped[struct{ p *int }](10)
}

func TestHasPointers(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{int32(0), false}, {[4]int64{}, false}, {struct{ a, b uint8 }{}, false}, {[0]*int{}, false},
		{struct {
			a int
			b [2]struct{ c float64 }
		}{}, false},
		{new(int), true}, {"", true}, {[]int{}, true}, {map[int]int{}, true}, {func() {}, true},
		{struct {
			a int
			b [1]struct{ s string }
		}{}, true},
	} {
		if got := HasPointers(reflect.TypeOf(tc.v)); got != tc.want {
			t.Errorf("HasPointers(%T) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
