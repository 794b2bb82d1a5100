// Package prefetch asks the CPU to start loading a cache line that code
// will read soon. The simulator's events each touch a few records that no
// cache holds any more (a layer of a thousand ranks keeps a gigabyte in
// flight), and an event's handler stalls on each; loading the next
// events' records while this one runs overlaps those stalls. A prefetch
// is only a hint: it never faults and changes no result.
package prefetch
