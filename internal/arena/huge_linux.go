package arena

import "syscall"

// adviseHuge asks the kernel to back b with transparent huge pages
// (where it is set to "madvise" or "always"): a chunk filled from start
// to end then faults in 2 MiB at a time, not 4 KiB. The advice is only
// advice: an error changes nothing.
func adviseHuge(b []byte) {
	if !heapFallback {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
