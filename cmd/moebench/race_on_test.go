//go:build race

package main

// raceOn is true under the race detector, which slows the model about
// tenfold: tests that only re-check figures skip there.
const raceOn = true
