//go:build ptytest

package cli

import (
	"os"
	"strings"
	"time"
)

// The pseudo-terminal tests build the binary with the tag ptytest and set
// NEARDUP_PTYTEST_PACE to "DURATION" or "STAGE=DURATION" so that every
// stage (or the stage named) lasts long enough to be interrupted or
// resized while its bar is drawn.
func init() {
	v := os.Getenv("NEARDUP_PTYTEST_PACE")
	stage, dur, ok := strings.Cut(v, "=")
	if !ok {
		stage, dur = "", v
	}
	if d, err := time.ParseDuration(dur); err == nil {
		progressPace, progressPaceStage = d, stage
	}
}
