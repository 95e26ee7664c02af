//go:build race

package cli

// raceEnabled is true under the race detector, whose shadow memory makes a
// process's resident size several times the product's.
const raceEnabled = true
