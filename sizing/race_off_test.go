//go:build !race

package sizing

const raceOn = false
