//go:build long

package cli

// ptyAll is true with the tag long: TestPTY runs every estimate of every
// command and an interruption in every stage.
const ptyAll = true
