package store

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// A full disk.
//
// Pebble cannot survive a failed write to its write-ahead log. The log
// writer keeps the error for the batches waiting on their sync (the HTTP
// 500s a full disk first gave), yet pebble goes on accepting writes into
// the failed log; at the next log rotation (a full memtable, or a Flush)
// rotateWAL panics with the database mutex released, and the deferred
// unlock of its caller kills the process: "fatal error: sync: unlock of
// unlocked mutex" (db.go, commitWrite and rotateWAL in pebble v2.1.7). A
// write that itself fails in the log panics inside the commit pipeline
// with its mutex held, so a recovered panic deadlocks the next write.
// Also, a memtable that cannot be flushed for want of space stalls every
// later write for good.
//
// So a full disk must never reach pebble's log. Every write first checks
// the free space of the index's file system (statfs) and is refused with
// ErrDiskFull, before anything is written, unless it leaves
// Options.MinFreeBytes free: room for a new log file (pebble preallocates
// about 1.1 x MemTableSize) and for flushing the memtables, so that the
// writes already accepted can be made durable. Writes are accepted again
// as soon as space is freed. Background flushes and compactions that fail
// for lack of space are retried by pebble and lose nothing.
//
// Should the log fail anyway (another process took the reserve between
// the check and the write, an I/O error), the first failed sync or commit
// puts the store in the failed state for good: every later write, Flush
// and Compact is refused with ErrFailed without reaching pebble (so no
// rotation happens), queries go on, and Close leaves pebble alone. The
// documents acknowledged before are in the log, and the next process's
// Open replays them. With Options.NoSync a failed log is not reported to
// the store at all, and only the free-space check protects it.

// minFree returns the free space writes must leave, from opts.
func (o Options) minFree() int64 {
	switch {
	case o.MinFreeBytes < 0:
		return 0
	case o.MinFreeBytes > 0:
		return o.MinFreeBytes
	}
	mt := int64(o.MemTableSize)
	if mt == 0 {
		mt = DefaultMemTableSize
	}
	return 4 * mt
}

// space is the state of the disk guard.
type space struct {
	minFree int64
	failed  atomic.Pointer[error]
	// openedFull is set (wrapping ErrDiskFull) when Open found too
	// little free space to replay the write-ahead log and flush it, and
	// so opened the database read-only: every write gets it until the
	// index is reopened with space freed.
	openedFull error
}

// healthWriteBytes is the write Health asks room for: writable means a
// write of this size (a few documents) would be accepted, not merely
// that the reserve is intact (a free space of exactly MinFreeBytes
// refuses every write).
const healthWriteBytes = 64 << 10

// replayRoom returns nil when dir's file system has room to open the
// index writable: pebble replays the write-ahead logs (the *.log files)
// into memtables and flushes them, which writes about as many bytes as
// the logs hold, and MinFreeBytes must stay free after that. Otherwise it
// returns the error (wrapping ErrDiskFull) that the read-only index gives
// every write. The reserve (MinFreeBytes) is what is checked: it is sized
// to hold a memtable flush. On a full disk pebble's flush at open fails and is retried
// without end (a process spinning in Open, logging the error many times a
// second): opening read-only replays the logs in memory and writes
// nothing.
func replayRoom(dir string, minFree int64) error {
	if minFree <= 0 {
		return nil
	}
	free, err := freeBytes(dir)
	if err != nil {
		return nil // unknown: let pebble try
	}
	// The reserve alone decides: the logs' sizes on disk include
	// pebble's preallocation, which would refuse a writable open on a
	// disk that only has the reserve and a little more (and the reserve
	// is sized to hold a memtable flush). The size is reported below.
	// A quarter of the reserve is one memtable at the default sizing
	// (MinFreeBytes = 4 x MemTableSize): what the flush at open needs.
	if free >= minFree/4 {
		return nil
	}
	var logs int64
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".log") {
				if fi, err := e.Info(); err == nil {
					logs += fi.Size()
				}
			}
		}
	}
	return fmt.Errorf("%w: %w: %d bytes were free at open, and replaying its write-ahead log (%d bytes) needs a quarter of the reserve of %d; free space and restart to write again (queries are answered)",
		ErrDiskFull, ErrOpenedFull, free, logs, minFree)
}

// checkSpace returns ErrDiskFull unless need more bytes leave minFree
// bytes free.
func (s *Store) checkSpace(need int64) error {
	if s.space.minFree <= 0 {
		return nil
	}
	free, err := freeBytes(s.dir)
	if err != nil {
		return nil // unknown: let pebble try
	}
	if free < s.space.minFree+need {
		return fmt.Errorf("%w: %d bytes free; the index keeps %d in reserve and this write needs %d more", ErrDiskFull, free, s.space.minFree, need)
	}
	return nil
}

// fail puts the store in the failed state for good and returns the error
// every write will get from now on.
func (s *Store) fail(cause error) error {
	err := fmt.Errorf("%w: %v", ErrFailed, cause)
	s.space.failed.CompareAndSwap(nil, &err)
	return *s.space.failed.Load()
}

// failure returns the error of a failed store, or nil.
func (s *Store) failure() error {
	if p := s.space.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// commit applies b to pebble: the first step of every write, under s.mu.
// A full disk refuses it before pebble sees it; a failure inside pebble
// (whose commit pipeline is then unusable) fails the store.
func (s *Store) commit(b *pebble.Batch) (err error) {
	if err := s.failure(); err != nil {
		return err
	}
	if err := s.checkSpace(int64(b.Len())); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			err = s.fail(fmt.Errorf("writing the write-ahead log: %v", p))
		}
	}()
	if s.wopts.Sync {
		err = s.db.ApplyNoSyncWait(b, s.wopts)
	} else {
		err = s.db.Apply(b, s.wopts)
	}
	if err != nil {
		// The batch stays queued in pebble's commit pipeline, which no
		// later write can pass.
		return s.fail(err)
	}
	return nil
}

// syncWait waits for b, committed with Sync, to reach the disk. Pebble's
// log writer keeps its first error for every later write, so an error here
// fails the store.
func (s *Store) syncWait(b *pebble.Batch) error {
	if err := b.SyncWait(); err != nil {
		return s.fail(err)
	}
	return nil
}

// Health tells whether the index accepts writes: nil, ErrDiskFull (the
// disk has less free space than Options.MinFreeBytes: writes are refused
// until space is freed) or ErrFailed (a write failed inside the database:
// writes are refused until the index is reopened by a new process).
// Queries are answered in every case. It checks the free space afresh.
func (s *Store) Health() error {
	if err := s.failure(); err != nil {
		return err
	}
	if s.space.openedFull != nil {
		return s.space.openedFull
	}
	if s.folderGone() {
		return fmt.Errorf("%w: %s was removed while the index was open", ErrGone, s.dir)
	}
	if s.ronly {
		return nil
	}
	return s.checkSpace(healthWriteBytes)
}

// Status returns Len and Health (Index.Status).
func (s *Store) Status() (int64, error) { return s.Len(), s.Health() }
