//go:build race

package lsh

const raceEnabled = true
