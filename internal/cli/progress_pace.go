//go:build ptytest

package cli

import (
	"os"
	"time"
)

// The pseudo-terminal tests build the binary with the tag ptytest and set
// NEARDUP_PTYTEST_PACE (a duration) so that each stage lasts long enough
// to be interrupted or resized while its bar is drawn.
func init() {
	if d, err := time.ParseDuration(os.Getenv("NEARDUP_PTYTEST_PACE")); err == nil {
		progressPace = d
	}
}
