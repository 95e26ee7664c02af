//go:build !unix

package text

import "time"

// processCPU is not measured here: BenchmarkNormalizeData then reports no
// CPU time.
func processCPU() time.Duration { return 0 }
