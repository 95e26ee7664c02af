//go:build !linux

package arena

// adviseHuge does nothing where the kernel has no transparent huge pages
// to ask for.
func adviseHuge([]byte) {}
