//go:build !unix

package store

import (
	"errors"
	"io"
)

// readLock is not available outside Unix: a folder that cannot be
// written cannot be locked, and the open fails as before.
func readLock(string) (io.Closer, error) { return nil, errors.New("no shared lock on this system") }
