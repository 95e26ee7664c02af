// Package simbloom holds benchmarks that compare neardup's simhash and
// bloom packages with peer libraries and reference implementations. It is
// a separate module (replace github.com/neardup/neardup => ../..) so that
// the main module does not depend on the peers. The results and the
// commands that produced them are in docs/bench/simbloom.md.
package simbloom
