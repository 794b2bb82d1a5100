package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"moebench/internal/readme"
)

type recorder struct{ got []int64 }

func (r *recorder) Handle(e *Engine, op int32, arg int64) { r.got = append(r.got, arg) }

func TestEqualTimesPopInScheduleOrder(t *testing.T) {
	t.Parallel()
	var e Engine
	r := &recorder{}
	id := e.Register(r)
	for i := range 100 {
		e.At(5*Nanosecond, id, 0, int64(i))
	}
	e.Run()
	for i, v := range r.got {
		if v != int64(i) {
			t.Fatalf("event %d popped as %d: equal times must keep schedule order", i, v)
		}
	}
}

func TestOrderMatchesSortRandomized(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var e Engine
	type ev struct {
		at  Time
		idx int64
	}
	var want []ev
	r := &recorder{}
	id := e.Register(r)
	for i := range 5000 {
		at := Time(rng.IntN(200))
		e.At(at, id, 0, int64(i))
		want = append(want, ev{at, int64(i)})
	}
	e.Run()
	// stable order by time, ties by schedule index
	last := Time(-1)
	lastIdx := int64(-1)
	times := map[int64]Time{}
	for _, w := range want {
		times[w.idx] = w.at
	}
	for _, idx := range r.got {
		at := times[idx]
		if at < last || (at == last && idx < lastIdx) {
			t.Fatalf("event %d at %v popped after event %d at %v", idx, at, lastIdx, last)
		}
		last, lastIdx = at, idx
	}
	if len(r.got) != len(want) {
		t.Fatalf("ran %d events, want %d", len(r.got), len(want))
	}
}

func TestSchedulingInThePastPanics(t *testing.T) {
	t.Parallel()
	var e Engine
	noop := e.Register(HandlerFunc(func(*Engine, int32, int64) {}))
	e.At(10, e.Register(HandlerFunc(func(e *Engine, _ int32, _ int64) {
		defer func() {
			if recover() == nil {
				t.Error("scheduling before now did not panic")
			}
		}()
		e.At(5, noop, 0, 0)
	})), 0, 0)
	e.Run()
}

// An event's handler and op share a word with its sequence: every
// handler and op in range comes back as scheduled, and one out of range
// is refused rather than silently aliased.
func TestEventKeyRoundTrips(t *testing.T) {
	t.Parallel()
	var e Engine
	type got struct {
		h  int
		op int32
	}
	var ran []got
	var ids []HandlerID
	for i := range 300 {
		ids = append(ids, e.Register(HandlerFunc(func(_ *Engine, op int32, _ int64) { ran = append(ran, got{i, op}) })))
	}
	for i, id := range ids {
		e.At(Time(i), id, int32(i%256), int64(i))
	}
	e.Run()
	for i, g := range ran {
		if g.h != i || g.op != int32(i%256) {
			t.Fatalf("event %d ran handler %d op %d, want handler %d op %d", i, g.h, g.op, i, i%256)
		}
	}
	for _, op := range []int32{-1, 256} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("op %d did not panic", op)
				}
			}()
			e.At(e.Now(), ids[0], op, 0)
		}()
	}
}

// Running out of sequence numbers renumbers the pending events without
// moving any: an engine that renumbers every few dozen events runs a
// random cascade (ties, the near heap, the wheel and the far heap alike)
// in exactly the order of one that never does.
func TestRenumberingKeepsOrder(t *testing.T) {
	t.Parallel()
	run := func(limit uint64) []int64 {
		rng := rand.New(rand.NewPCG(7, 9))
		e := Engine{seqLimit: limit}
		var order []int64
		var id HandlerID
		n := int64(0)
		id = e.Register(HandlerFunc(func(e *Engine, op int32, arg int64) {
			order = append(order, arg)
			for range rng.IntN(3) {
				if n >= 20000 {
					return
				}
				n++
				var d Time
				switch rng.IntN(4) {
				case 0: // a tie with now
				case 1:
					d = Time(rng.IntN(1000))
				case 2:
					d = Time(rng.IntN(int(SlotWidth) * 64))
				default: // past the wheel
					d = Time(rng.IntN(int(SlotWidth)*wheelSlots*3)) + SlotWidth*wheelSlots
				}
				e.At(e.Now()+d, id, op, n)
			}
		}))
		for i := range 200 {
			n++
			e.At(Time(rng.IntN(5))*SlotWidth, id, int32(i%7), n)
		}
		e.Run()
		return order
	}
	want := run(0)
	for _, limit := range []uint64{300, 1000} {
		got := run(limit)
		if !slices.Equal(got, want) {
			t.Fatalf("renumbering every %d events changed the order of %d events", limit, len(want))
		}
	}
	if len(want) < 5000 {
		t.Fatalf("only %d events ran", len(want))
	}
}

func TestRunUntilAndStop(t *testing.T) {
	t.Parallel()
	var e Engine
	r := &recorder{}
	id := e.Register(r)
	for i := range 10 {
		e.At(Time(i)*Microsecond, id, 0, int64(i))
	}
	if more := e.RunUntil(4 * Microsecond); !more {
		t.Fatal("RunUntil reported no events left")
	}
	if len(r.got) != 5 || e.Now() != 4*Microsecond {
		t.Fatalf("ran %d events to %v, want 5 to 4µs", len(r.got), e.Now())
	}
	e.At(e.Now(), e.Register(HandlerFunc(func(e *Engine, _ int32, _ int64) { e.Stop() })), 0, 0)
	e.Run()
	if len(r.got) != 5 {
		t.Fatalf("Stop did not stop: %d events ran", len(r.got))
	}
	e.Run()
	if len(r.got) != 10 || e.Pending() != 0 {
		t.Fatalf("after resuming: %d ran, %d pending", len(r.got), e.Pending())
	}
}

// chain reschedules itself, modelling a steady-state component.
type chain struct {
	n   int
	rng *rand.Rand
	id  HandlerID
}

func (c *chain) Handle(e *Engine, op int32, arg int64) {
	if c.n == 0 {
		return
	}
	c.n--
	e.After(Time(1+c.rng.IntN(1000)), c.id, op, arg)
}

func TestSteadyStateDoesNotAllocate(t *testing.T) {
	var e Engine
	c := &chain{n: 1 << 30, rng: rand.New(rand.NewPCG(3, 4))}
	c.id = e.Register(c)
	for i := range 1024 {
		e.At(Time(i), c.id, 0, int64(i))
	}
	e.RunUntil(e.Now() + 10*Microsecond) // grow the heap to its working size
	allocs := testing.AllocsPerRun(10, func() {
		e.RunUntil(e.Now() + Microsecond)
	})
	if allocs != 0 {
		t.Fatalf("steady state allocates %v times per run", allocs)
	}
}

func TestNsRounding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ns   float64
		want Time
	}{{0, 0}, {1, 1000}, {3.846, 3846}, {0.0004, 0}, {0.0006, 1}} {
		if got := Ns(tc.ns); got != tc.want {
			t.Errorf("Ns(%v) = %d, want %d", tc.ns, got, tc.want)
		}
	}
}

// BenchmarkEngine measures events per second with 1,024 pending events, the
// size of a busy NIC model's queue.
func BenchmarkEngine(b *testing.B) {
	b.ReportAllocs()
	var e Engine
	c := &chain{n: 1 << 62, rng: rand.New(rand.NewPCG(5, 6))}
	c.id = e.Register(c)
	for i := range 1024 {
		e.At(Time(i), c.id, 0, int64(i))
	}
	e.RunUntil(100 * Microsecond)
	start := e.Handled()
	b.ResetTimer()
	for b.Loop() {
		e.RunUntil(e.Now() + Microsecond)
	}
	b.StopTimer()
	n := e.Handled() - start
	b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}

// pipeline models a component whose events wait one of a few fixed
// latencies, the shape of the transport models (a message slot, a drain, a
// DMA read, a completion).
type pipeline struct {
	id   HandlerID
	lats [5]Time
}

func (p *pipeline) Handle(e *Engine, op int32, arg int64) {
	e.After(p.lats[arg%5], p.id, op, arg+1)
}

// BenchmarkEngineModelShaped runs 256 components, each always holding one
// pending event delayed by one of five fixed latencies.
func BenchmarkEngineModelShaped(b *testing.B) {
	b.ReportAllocs()
	var e Engine
	p := &pipeline{lats: [5]Time{3846, 70 * Nanosecond, 175 * Nanosecond, 610 * Nanosecond, 3300 * Nanosecond}}
	p.id = e.Register(p)
	for i := range 256 {
		e.At(Time(i), p.id, 0, int64(i))
	}
	e.RunUntil(100 * Microsecond)
	start := e.Handled()
	b.ResetTimer()
	for b.Loop() {
		e.RunUntil(e.Now() + 10*Microsecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(e.Handled()-start)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}

// spreader schedules follow-up events at delays from picoseconds to past
// the wheel's horizon, checking that time never goes backwards and that
// equal times keep schedule order.
type spreader struct {
	t       *testing.T
	id      HandlerID
	rng     *rand.Rand
	left    int
	lastAt  Time
	lastSeq int64
}

func (s *spreader) Handle(e *Engine, _ int32, arg int64) {
	if e.Now() < s.lastAt || (e.Now() == s.lastAt && arg < s.lastSeq) {
		s.t.Fatalf("event %d at %v ran after event %d at %v", arg, e.Now(), s.lastSeq, s.lastAt)
	}
	s.lastAt, s.lastSeq = e.Now(), arg
	for range 2 {
		if s.left == 0 {
			return
		}
		s.left--
		var d Time
		switch s.rng.IntN(4) {
		case 0:
			d = Time(s.rng.IntN(10)) // same slot, ties likely
		case 1:
			d = Time(s.rng.IntN(int(10 * Microsecond)))
		case 2:
			d = Time(s.rng.IntN(int(3 * Millisecond))) // past the horizon
		default:
			d = SlotWidth * Time(s.rng.IntN(wheelSlots+3))
		}
		e.After(d, s.id, 0, int64(e.seq+1))
	}
}

func TestWheelKeepsTotalOrderAcrossHorizons(t *testing.T) {
	t.Parallel()
	var e Engine
	s := &spreader{t: t, rng: rand.New(rand.NewPCG(7, 8)), left: 200000, lastSeq: -1}
	s.id = e.Register(s)
	for i := range 64 {
		e.At(Time(i)*Microsecond, s.id, 0, int64(e.seq+1))
	}
	e.Run()
	if e.Pending() != 0 || s.left != 0 {
		t.Fatalf("%d events pending, %d not scheduled", e.Pending(), s.left)
	}
	if e.Handled() != 200064 {
		t.Fatalf("handled %d events, want 200064", e.Handled())
	}
}

// timedRecorder notes the order and times events ran at; an op 1 event
// schedules more first.
type timedRecorder struct {
	got  []int64
	at   []Time
	more func(e *Engine)
}

func (r *timedRecorder) Handle(e *Engine, op int32, arg int64) {
	if op == 1 {
		r.more(e)
		return
	}
	r.got = append(r.got, arg)
	r.at = append(r.at, e.Now())
}

// A crowded slot (some of its events from the far heap, the others from
// the wheel, with ties) runs in (time, schedule) order, as sorting it in
// its blocks must keep it: short slots through the scratch array, long
// ones split by time, on whole nanoseconds (few distinct times, many
// ties), on any picosecond, and clustered so that one split's bucket is
// itself too long and is split again.
func TestCrowdedSlotRunsInTimeThenScheduleOrder(t *testing.T) {
	t.Parallel()
	ns := func(rng *rand.Rand) Time { return Time(rng.IntN(int(SlotWidth)/1000)) * 1000 }
	ps := func(rng *rand.Rand) Time { return Time(rng.IntN(int(SlotWidth))) }
	clustered := func(rng *rand.Rand) Time {
		if rng.IntN(8) == 0 {
			return ps(rng)
		}
		return 5000 + Time(rng.IntN(300))
	}
	for _, tc := range []struct {
		name string
		n    int
		at   func(*rand.Rand) Time
	}{
		{"ns", 3, ns}, {"ns", 64, ns}, {"ns", 65, ns}, {"ns", 5000, ns}, {"ns", 600000, ns},
		{"ps", 40000, ps}, {"ps", 600000, ps}, {"clustered", 300000, clustered},
	} {
		var e Engine
		r := &timedRecorder{}
		id := e.Register(r)
		rng := rand.New(rand.NewPCG(uint64(tc.n), 9))
		base := SlotWidth * (wheelSlots + 5) // past the horizon: the far heap
		type ev struct {
			at  Time
			seq int64
		}
		var want []ev
		add := func(e *Engine, seq int) {
			at := base + tc.at(rng)
			e.At(at, id, 0, int64(seq))
			want = append(want, ev{at, int64(seq)})
		}
		for i := range tc.n {
			add(&e, i)
		}
		// Once the clock is near, more events join the same slot through
		// the wheel.
		r.more = func(e *Engine) {
			for i := range tc.n {
				add(e, tc.n+i)
			}
		}
		e.At(SlotWidth*7, id, 1, 0)
		e.Run()
		slices.SortStableFunc(want, func(a, b ev) int { return cmp.Compare(a.at, b.at) })
		if len(r.got) != len(want) {
			t.Fatalf("%s, n=%d: ran %d events, want %d", tc.name, tc.n, len(r.got), len(want))
		}
		for i := range want {
			if r.got[i] != want[i].seq || r.at[i] != want[i].at {
				t.Fatalf("%s, n=%d: event %d was %d at %v, want %d at %v", tc.name, tc.n, i, r.got[i], r.at[i], want[i].seq, want[i].at)
			}
		}
	}
}

// A burst is sorted in the blocks that hold it: the engine never holds
// more blocks than the burst fills plus one partial block per bucket of
// each split, and its scratch array stays short, however long the burst.
func TestBurstSortsInItsOwnBlocks(t *testing.T) {
	t.Parallel()
	const n = 1 << 20
	var e Engine
	r := &timedRecorder{}
	id := e.Register(r)
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range n {
		e.At(3*SlotWidth+Time(rng.IntN(int(SlotWidth))), id, 0, int64(i))
	}
	e.Run()
	if len(r.got) != n {
		t.Fatalf("ran %d events, want %d", len(r.got), n)
	}
	for i := 1; i < n; i++ {
		if r.at[i] < r.at[i-1] {
			t.Fatalf("event %d at %v ran after one at %v", i, r.at[i], r.at[i-1])
		}
	}
	if limit := n/blockLen + 3<<digitBits; len(e.blocks) > limit {
		t.Errorf("the burst took %d blocks, want at most %d", len(e.blocks), limit)
	}
	if cap(e.tmp) > 2*shortRun {
		t.Errorf("scratch of %d events for a burst of %d, want at most %d", cap(e.tmp), n, 2*shortRun)
	}
}

// BenchmarkEngineBurst runs a slot of a million events at 64 instants
// scheduled out of order, the shape of every rank's posts meeting at once
// in a large layer: scheduling, sorting the slot and running it.
func BenchmarkEngineBurst(b *testing.B) {
	b.ReportAllocs()
	const n = 1 << 20
	var e Engine
	r := HandlerFunc(func(*Engine, int32, int64) {})
	id := e.Register(r)
	for b.Loop() {
		base := e.Now() + 2*SlotWidth
		base -= base % SlotWidth
		for i := range n {
			e.At(base+Time(i*7919%64)*1000, id, 0, int64(i))
		}
		e.Run()
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds()/1e6, "Mevents/s")
}

// prefetchRecorder records, for each event (its arg), when it was named
// far ahead, near and handled, on one clock of calls.
type prefetchRecorder struct {
	clock           int
	far, near, done map[int64]int
	order           []int64
}

func (r *prefetchRecorder) Handle(e *Engine, op int32, arg int64) {
	r.clock++
	r.done[arg] = r.clock
	r.order = append(r.order, arg)
}

func (r *prefetchRecorder) Prefetch(op int32, arg int64, near bool) {
	r.clock++
	if op != 7 {
		panic("prefetch of another op")
	}
	if near {
		r.near[arg] = r.clock
	} else {
		r.far[arg] = r.clock
	}
}

// A Prefetcher is told of crowded events before they run, far ahead and
// then near, only of events still pending, and changes no order.
func TestPrefetchNamesEventsAhead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 5000
	at := make([]Time, n)
	for i := range at {
		// A few crowded slots past the current one (whose events wait in
		// the near heap, which is not prefetched: a slot's run is).
		at[i] = SlotWidth + Time(rng.Int64N(int64(4*SlotWidth)))
	}
	var plain Engine
	want := &recorder{}
	id := plain.Register(want)
	for i, t := range at {
		plain.At(t, id, 7, int64(i))
	}
	plain.Run()

	var e Engine
	r := &prefetchRecorder{far: map[int64]int{}, near: map[int64]int{}, done: map[int64]int{}}
	id = e.Register(r)
	for i, t := range at {
		e.At(t, id, 7, int64(i))
	}
	e.Run()
	if !slices.Equal(r.order, want.got) {
		t.Fatal("a prefetching handler's events ran in another order")
	}
	both := 0
	for arg, done := range r.done {
		f, okf := r.far[arg]
		nr, okn := r.near[arg]
		if (okf && f > done) || (okn && nr > done) {
			t.Fatalf("event %d named after it ran", arg)
		}
		if okf && okn && f < nr {
			both++
		}
	}
	if both < n*9/10 {
		t.Errorf("%d of %d events were named far and then near before they ran, want at least 90%%", both, n)
	}
}

// docs/performance.md quotes how far ahead the engine names events.
func TestDocLookahead(t *testing.T) {
	readme.Says(t, "../docs/performance.md", fmt.Sprintf("The engine names the events %d and %d places ahead", 2*lookahead, lookahead))
}

// docs/performance.md's wheel is this one: its slot width, horizon and
// size.
func TestDocWheel(t *testing.T) {
	var e Engine
	slot := int(unsafe.Sizeof(e.wheel[0]))
	readme.Says(t, "../docs/performance.md",
		fmt.Sprintf("a timing wheel of %.0f ns slots, each a chain of pooled blocks, %.1f ms of them", float64(SlotWidth)/1e3, float64(SlotWidth*wheelSlots)/1e9),
		fmt.Sprintf("wheel at %d bytes a slot, %d KiB", slot, slot*wheelSlots>>10))
}

// Events up to the horizon wait in the wheel, not the far heap: a large LL
// layer schedules deliveries over a millisecond ahead (see wheelSlots).
func TestWheelHoldsMillisecondsAhead(t *testing.T) {
	var e Engine
	h := e.Register(HandlerFunc(func(*Engine, int32, int64) {}))
	for _, ahead := range []Time{Ns(1300e3), Ns(2600e3), Ns(4000e3)} {
		e.At(ahead, h, 0, 0)
	}
	if len(e.far) != 0 {
		t.Fatalf("%d of 3 events up to 4 ms ahead went to the far heap", len(e.far))
	}
	e.At(Ns(5000e3), h, 0, 0)
	if len(e.far) != 1 {
		t.Fatal("an event past the horizon should wait in the far heap")
	}
	e.Run()
	if e.Handled() != 4 {
		t.Fatalf("ran %d of 4 events", e.Handled())
	}
}

// Blocks past the singles come 512 at a time (4 KiB pages) while the
// wheel's blocks are mostly empty, one event in each slot as a small
// layer's are, and 2,048 at a time (huge pages) once they fill.
func TestBlockBatchesFollowFill(t *testing.T) {
	h := HandlerFunc(func(*Engine, int32, int64) {})
	taken := func(e *Engine) int { return len(e.blocks) + len(e.spareBlk) }
	var sparse Engine
	id := sparse.Register(h)
	for i := range blockSingles + 1 {
		sparse.At(Time(i+1)*SlotWidth, id, 0, 0)
	}
	if got := taken(&sparse); got != 2*blockSingles {
		t.Errorf("one event in each of %d slots took %d blocks, want %d", blockSingles+1, got, 2*blockSingles)
	}
	var dense Engine
	id = dense.Register(h)
	for i := range blockSingles {
		for range blockLen {
			dense.At(Time(i+1)*SlotWidth, id, 0, 0)
		}
	}
	dense.At(Time(blockSingles+1)*SlotWidth, id, 0, 0)
	if got := taken(&dense); got != blockSingles+blockBatch {
		t.Errorf("%d full slots and one more took %d blocks, want %d", blockSingles, got, blockSingles+blockBatch)
	}
}

func TestTimeString(t *testing.T) {
	for _, c := range []struct {
		t    Time
		want string
	}{
		{500, "500ps"}, {1500, "1.5ns"}, {2500 * Nanosecond, "2.5µs"}, {4295 * Millisecond, "4295ms"},
		{38650 * Millisecond, "38.65s"}, {9999 * Second, "9999s"}, {123456 * Second, "123456s"}, {-3 * Nanosecond, "-3ns"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("Time(%d).String() = %q, want %q", int64(c.t), got, c.want)
		}
	}
}
