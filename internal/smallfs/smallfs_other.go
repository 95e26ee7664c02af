//go:build !linux

package smallfs

import "errors"

var errUnsupported = errors.New("tmpfs mounts are made on Linux only")

func mount(string, int64) error { return errUnsupported }

func unmount(string) {}

// Free returns the bytes available on the file system of dir: unknown
// outside Linux.
func Free(string) (int64, error) { return 0, errUnsupported }

func bindReadOnly(string) error { return errUnsupported }
