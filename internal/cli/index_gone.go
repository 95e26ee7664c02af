package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/neardup/neardup/store"
)

// indexFolder is the identity of an index folder and of its LOCK file as
// they were when the index was opened. A folder removed while a command
// runs (rm -rf) does not stop pebble, which keeps writing to the files it
// holds open: the documents written go nowhere, and the command would
// report success. gone tells it.
type indexFolder struct {
	dir        string
	dirI, lock os.FileInfo
}

// watchIndexFolder records the identity of the index folder loc; nil for
// a Redis URL, or a folder that cannot be read (the open said so already).
func watchIndexFolder(loc string) *indexFolder {
	if store.IsURL(loc) {
		return nil
	}
	d, err := os.Stat(loc)
	if err != nil {
		return nil
	}
	f := &indexFolder{dir: loc, dirI: d}
	f.lock, _ = os.Stat(filepath.Join(loc, "LOCK"))
	return f
}

// gone tells whether the folder, or its LOCK file, is no longer the one
// that was opened: removed, or replaced by another of the same name.
func (f *indexFolder) gone() bool {
	if f == nil {
		return false
	}
	d, err := os.Stat(f.dir)
	if err != nil || !os.SameFile(d, f.dirI) {
		return true
	}
	if f.lock != nil {
		l, err := os.Stat(filepath.Join(f.dir, "LOCK"))
		if err != nil || !os.SameFile(l, f.lock) {
			return true
		}
	}
	return false
}

// goneErr is the failure of a command whose index folder was removed
// while it ran (exit 1).
func (f *indexFolder) goneErr(what string) error {
	return fmt.Errorf("--index %s: the index folder was removed while the command ran: %s; create the index again and run the command again", f.dir, what)
}

// testHookIndexMidRun, when set by a test, runs after each batch of index
// add or query is written, given the --index of the command (tests that
// run at once tell their own index by it).
var testHookIndexMidRun atomic.Pointer[func(loc string)]
