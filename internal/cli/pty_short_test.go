//go:build !long

package cli

// ptyAll is false in scripts/check: TestPTY runs the high estimate (the
// case that hung) and two interruptions; scripts/check-long (tag long)
// runs every estimate and every stage.
const ptyAll = false
