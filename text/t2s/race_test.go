//go:build race

package t2s

const raceEnabled = true
