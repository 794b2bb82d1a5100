//go:build !race

package moe_test

const raceOn = false
