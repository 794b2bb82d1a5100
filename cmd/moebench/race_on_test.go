//go:build race

package main

// raceOn skips the long single-goroutine checks under the race detector.
const raceOn = true
