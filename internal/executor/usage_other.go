//go:build !unix

package executor

import (
	"os"
	"time"
)

// rusagePeak is 0: this system reports no peak resident set for a child
// through os.ProcessState (a task still writes its own to the PeakEnv
// file).
func rusagePeak(*os.ProcessState) int64 { return 0 }

// selfUsage is zeros: no getrusage here.
func selfUsage() (user, sys time.Duration, maxrss int64) { return 0, 0, 0 }
