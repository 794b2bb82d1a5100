//go:build race

package moe_test

// raceOn is true under the race detector, which slows the model about
// tenfold: tests without concurrency skip there.
const raceOn = true
