//go:build race

package bloom

// raceEnabled shrinks the statistical tests under the race detector, which
// makes every atomic operation an order of magnitude slower.
const raceEnabled = true
