package store

import "syscall"

// adviseHuge asks for transparent huge pages (when the kernel's setting is
// "madvise"): a lookup touches one random slot per table, and with 4 KiB
// pages each of them is also a TLB miss.
func adviseHuge(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
