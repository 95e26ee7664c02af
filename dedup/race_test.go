//go:build race

package dedup

const raceEnabled = true
