//go:build race

package corpus

// raceEnabled is true under the race detector, which makes the tests over
// large real archives ten times slower.
const raceEnabled = true
