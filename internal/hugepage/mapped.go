package hugepage

import (
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
)

// Mapped returns n zeroed values of a pointer-free T outside the Go heap,
// advised for huge pages like Make; Unmap gives them back. It is for
// arrays a run drops midway, such as a slab's batches once the slab is
// empty or a table only the first microseconds of a phase read: memory
// the collector frees only at its next cycle, which a heap growing
// without garbage may not reach before the run's peak, while Unmap
// returns it to the system at once. Where the system has no anonymous
// mappings it is Make, and Unmap leaves the array to the collector.
func Mapped[T any](n int) []T { return mappedAdvised[T](n, false) }

// MappedTouched is Mapped for an array the caller is about to fill whole,
// populated at once like MakeTouched.
func MappedTouched[T any](n int) []T { return mappedAdvised[T](n, true) }

func mappedAdvised[T any](n int, populate bool) []T {
	if HasPointers(reflect.TypeFor[T]()) {
		// The collector never scans mapped memory.
		panic(fmt.Sprintf("hugepage: Mapped of %v, which holds pointers", reflect.TypeFor[T]()))
	}
	if n == 0 {
		return nil
	}
	s := mapped[T](n, populate)
	_, size := span(s)
	mappedBytes.Add(int64(size))
	mappedTotal.Add(int64(size))
	notify()
	return s
}

// Unmap returns an array from Mapped to the system; s must be the whole
// array Mapped returned, and nothing may use it after.
func Unmap[T any](s []T) {
	if _, size := span(s); size > 0 {
		mappedBytes.Add(-int64(size))
		unmap(s)
		notify()
	}
}

// mappedBytes is what Mapped has handed out and Unmap not taken back;
// mappedTotal all it has handed out.
var mappedBytes, mappedTotal atomic.Int64

// MappedBytes is the memory Mapped arrays hold now, which the Go
// runtime's statistics leave out.
func MappedBytes() int64 { return mappedBytes.Load() }

// watcher is Watch's function, or nil.
var watcher atomic.Pointer[func()]

// Watch makes f run after every change in what Mapped arrays hold, as a
// program that gives the Go runtime a memory limit needs: the runtime does
// not count that memory, so its limit has to leave room for it. f may run
// on any goroutine, on several at once, and must read MappedBytes itself;
// nil stops the calls.
func Watch(f func()) {
	if f == nil {
		watcher.Store(nil)
		return
	}
	watcher.Store(&f)
}

func notify() {
	if f := watcher.Load(); f != nil {
		(*f)()
	}
}

// MappedTotal is all the memory Mapped has handed out, the counterpart of
// runtime.MemStats.TotalAlloc.
func MappedTotal() int64 { return mappedTotal.Load() }

// Mappings are Mapped arrays an owner holds and gives back itself
// (UnmapAll), or, should the owner be dropped with some still held (a run
// that failed midway), that the collector gives back once it finds the
// owner unreachable. The zero value is empty; a Mappings must not be
// copied once it holds an array.
type Mappings[T any] struct {
	set *mappingSet[T]
}

// mappingSet is apart from the Mappings so that the cleanup, which holds
// it, does not keep the owner reachable.
type mappingSet[T any] struct {
	arrays [][]T
}

// Map is Mapped, held by m.
func (m *Mappings[T]) Map(n int) []T { return m.hold(Mapped[T](n)) }

// MapTouched is MappedTouched, held by m.
func (m *Mappings[T]) MapTouched(n int) []T { return m.hold(MappedTouched[T](n)) }

func (m *Mappings[T]) hold(s []T) []T {
	if len(s) == 0 {
		return s
	}
	if m.set == nil {
		m.set = &mappingSet[T]{}
		runtime.AddCleanup(m, (*mappingSet[T]).unmapAll, m.set)
	}
	m.set.arrays = append(m.set.arrays, s)
	return s
}

// UnmapAll gives back every array m holds.
func (m *Mappings[T]) UnmapAll() {
	if m.set != nil {
		m.set.unmapAll()
	}
}

// Held counts the arrays m holds.
func (m *Mappings[T]) Held() int {
	if m.set == nil {
		return 0
	}
	return len(m.set.arrays)
}

func (s *mappingSet[T]) unmapAll() {
	for i, a := range s.arrays {
		Unmap(a)
		s.arrays[i] = nil
	}
	s.arrays = s.arrays[:0]
}

// HasPointers reports whether a value of type t holds anything the
// garbage collector follows.
func HasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && HasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if HasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
