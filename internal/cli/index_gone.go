package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/neardup/neardup/internal/atomicfile"
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

// lostWords is what an index add whose folder was removed loses: the
// documents it added, or the upgrade (--upgrade).
func lostWords(added int64, upgrade bool) string {
	if upgrade {
		return "the upgrade is lost"
	}
	return fmt.Sprintf("the %s added are lost", plural(int(added), "document"))
}

// testHookIndexMidRun, when set by a test, runs after each batch of index
// add or query is written, given the --index of the command (tests that
// run at once tell their own index by it).
var testHookIndexMidRun atomic.Pointer[func(loc string)]

// fatalWatch words the failure pebble cannot survive, which ends the
// process from inside pebble (store.Options.OnFatal): a memtable flush,
// compaction or log rotation that finds the index folder removed fails
// before the command's own check, and would end the process with
// pebble's words about the files it could not find. Set in the options
// before the index is opened; folder and the count of documents added
// are given as the command runs (from its goroutine, read from pebble's).
type fatalWatch struct {
	stderr io.Writer
	loc    string
	folder atomic.Pointer[indexFolder]
	// what is what the folder removed loses: "the 12 documents added
	// are lost".
	what atomic.Pointer[string]
	// temps are the temporary files of the command's outputs (-o),
	// which a deferred Abort would remove, but the process ends from
	// pebble's goroutine.
	mu    sync.Mutex
	temps []string
}

func newFatalWatch(stderr io.Writer, loc, what string) *fatalWatch {
	f := &fatalWatch{stderr: stderr, loc: loc}
	f.what.Store(&what)
	return f
}

// lost sets what the folder removed loses.
func (f *fatalWatch) lost(what string) { f.what.Store(&what) }

// removeOnFatal has the process's end through onFatal remove the
// temporary file of out (atomicfile.File.TempName), which the command's
// deferred Abort would have: it was left for the next run to sweep.
func (f *fatalWatch) removeOnFatal(out *atomicfile.File) {
	if name := out.TempName(); name != "" {
		f.mu.Lock()
		f.temps = append(f.temps, name)
		f.mu.Unlock()
	}
}

// onFatal is store.Options.OnFatal: the folder removed is worded as the
// command's own check words it (exit 1); any other failure is the
// store's words, after --index. The temporary files of the outputs are
// removed first (a file already renamed in place is not there to remove).
func (f *fatalWatch) onFatal(err error) {
	f.mu.Lock()
	for _, name := range f.temps {
		os.Remove(name)
	}
	f.mu.Unlock()
	if fo := f.folder.Load(); fo != nil && fo.gone() {
		err = fo.goneErr(*f.what.Load())
	} else {
		err = fmt.Errorf("--index %s: %w", redactLoc(f.loc), err)
	}
	fmt.Fprintf(f.stderr, "neardup: %v\n", err)
	os.Exit(ExitFailure)
}
