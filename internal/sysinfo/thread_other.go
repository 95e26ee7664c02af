//go:build !linux && !darwin

package sysinfo

import "time"

// ThreadCPU returns ok false: this system is not asked.
func ThreadCPU() (d time.Duration, ok bool) { return 0, false }
