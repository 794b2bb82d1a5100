// Package sim is the discrete-event engine under every model in moebench.
//
// What flows in: components register a Handler once (Register returns a
// HandlerID) and schedule events as (time, handler, op, arg) with At or
// After; op and arg are the handler's own (an event kind, an index), so
// scheduling needs no closure and the steady state allocates nothing. What
// flows out: Run, RunUntil and Step call the handlers in (time, sequence)
// order, so that events at one instant fire in the order they were
// scheduled and every run is deterministic for a given input. Scheduling
// in the past panics: it is a bug in the model, not user input.
//
// Time is an integer count of picoseconds, so that sub-nanosecond costs (a
// 3.85 ns NIC message slot, a 0.5 ns clock cycle) add up without rounding
// drift. Pending events live in three tiers: the current wheel slot (a
// sorted run, and a near 4-ary heap beside it), a timing wheel of 32,768
// slots of 131 ns whose events wait unsorted in chains of pooled blocks,
// and a far heap past the wheel's 4.3 ms horizon. When the clock reaches a
// slot, its blocks are sorted where they lie and become the run; the near
// heap takes only what is scheduled into the slot later. So with a million
// events in flight the heap sifts only a few, and a burst is never copied.
// The order is (time, sequence) whichever tier an event came through. No
// goroutine runs per event, and an Engine is used by one goroutine:
// parallel runs use independent engines.
//
// Slab is the models' store for in-flight state (messages, operations):
// fixed-size chunks with recycled slots, stable indices and no copying as
// the population grows.
package sim
