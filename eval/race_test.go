//go:build race

package eval

// raceEnabled skips the largest shared-data checks under the race
// detector, which makes them about ten times slower.
const raceEnabled = true
