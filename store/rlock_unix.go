//go:build unix

package store

import (
	"io"
	"os"
	"syscall"
)

// readLock takes a shared lock on the lock file name, opened for reading
// only: the lock of a read-only open of an index whose folder this
// process may not write (pebble's own lock creates the file and opens it
// for writing). It conflicts with a writer's exclusive lock (EAGAIN, so
// ErrLocked) and keeps a writer out until it is closed; other readers
// share it.
func readLock(name string) (io.Closer, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Whence: io.SeekStart}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
