// Package sim is the discrete-event engine under every model in moebench.
//
// Time is an integer count of picoseconds, so that sub-nanosecond costs
// (a 3.85 ns NIC message slot, a 0.5 ns clock cycle) add up without rounding
// drift. Pending events live in one typed 4-ary heap ordered by (time,
// sequence): events at the same instant fire in the order they were
// scheduled, which makes every run deterministic for a given input. Events
// are plain values carrying a Handler and two small arguments, so the steady
// state allocates nothing and no goroutine is started per event.
package sim
