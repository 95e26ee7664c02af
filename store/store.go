package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/sketch"
)

// Errors returned by the package. Callers branch on them with errors.Is.
var (
	ErrParams       = errors.New("store: invalid parameters")
	ErrIncompatible = errors.New("store: incompatible with the index")
	ErrCorrupt      = errors.New("store: corrupt index data")
	ErrVersion      = errors.New("store: index format is newer than this program")
	ErrNotIndex     = errors.New("store: not a neardup index")
	ErrLocked       = errors.New("store: index is already open")
	ErrExists       = errors.New("store: an index already exists there")
	ErrDuplicateID  = errors.New("store: id already in the index")
	ErrNotFound     = errors.New("store: id not in the index")
	ErrInvalidID    = errors.New("store: invalid document id")
	ErrClosed       = errors.New("store: index is closed")
	// ErrFull is a document refused because the index has used every
	// sequence number its in-memory postings can hold (2^32 - 2 adds,
	// counting removed documents).
	ErrFull = errors.New("store: index has used all its sequence numbers")
	// ErrDiskFull is a write refused, before anything was written,
	// because the disk of the index has less free space than
	// Options.MinFreeBytes. Writes are accepted again once space is freed.
	ErrDiskFull = errors.New("store: not enough free disk space for the index")
	// ErrOpenedFull is the ErrDiskFull of an index that Open found on a
	// disk too full to replay its write-ahead log, and so opened
	// read-only: its writes are refused until it is reopened with space
	// freed, not as soon as space is freed. It comes wrapped with
	// ErrDiskFull.
	ErrOpenedFull = errors.New("the index was opened read-only")
	// ErrFailed is a write refused because an earlier write failed inside
	// the database (an I/O error of its write-ahead log): the index stops
	// writing until a new process reopens it. Acknowledged documents are
	// safe; queries are still answered.
	ErrFailed = errors.New("store: a write to the index failed; reopen it in a new process")
)

// Defaults of Options.
const (
	DefaultCacheSize    = 64 << 20
	DefaultMemTableSize = 16 << 20
)

// Options configures how an index is opened; none of them is stored. The
// zero value means the documented defaults.
type Options struct {
	// CacheSize is the size in bytes of the block cache; 0 means
	// DefaultCacheSize. With MemTableSize it bounds the memory of the index:
	// about CacheSize + 2 x MemTableSize, plus the iterators of queries in
	// flight.
	CacheSize int64
	// MemTableSize is the size in bytes of a memtable; 0 means
	// DefaultMemTableSize.
	MemTableSize uint64
	// NoSync acknowledges writes before the write-ahead log reaches the
	// disk. Faster for bulk loads; a crash may lose the latest writes
	// (never the index's consistency). Close and Flush still persist
	// everything.
	NoSync bool
	// ReadOnly opens the index for queries only; writes fail.
	ReadOnly bool
	// Shared, with ReadOnly, opens a directory index without its lock, so
	// that several processes may query it at once (the staged job's sign
	// tasks, --against INDEX). Nothing may write the index meanwhile: a
	// writer's compaction can delete the files such a reader reads.
	// Ignored by Redis indexes, which have no lock.
	Shared bool
	// EstimateOnly, at Create (CreateRedis), makes an index that keeps no
	// shingle sets: smaller (about 7.3 bytes less a shingle, docs/bench/
	// store.md), deciding MinHash candidates by the signature estimate
	// alone, as every index made before sets were kept does. By default a
	// MinHash index keeps each document's shingle set and decides as
	// dedup's tiered join (sketch.Spec.DecideLeader). Ignored by Open and
	// for SimHash indexes, which keep no sets.
	EstimateOnly bool
	// Extraction, at Create (CreateRedis) of an index of the main content
	// of HTML pages (MainContent), is the text.MainVersion it records as
	// the extraction of its pages: 0 means this build's, NoExtraction
	// none. index copy gives the source's (Extraction). Ignored by Open
	// and for other indexes.
	Extraction int
	// MinFreeBytes is the free disk space a write must leave on the index's
	// file system, or it is refused with ErrDiskFull: room for the
	// write-ahead log and for flushing the memtables, which the database
	// cannot survive running out of. 0 means 4 x MemTableSize (64 MiB by
	// default); a negative value turns the check off.
	MinFreeBytes int64
	// Logger receives pebble's messages; nil discards informational ones
	// and writes errors to standard error.
	Logger pebble.Logger
	// OnFatal, with Logger nil, is called when pebble meets a failure it
	// cannot survive and would end the process (its Logger's Fatalf): a
	// background flush, compaction or log rotation that cannot create its
	// files. err wraps ErrGone when the index folder was removed (rm -rf
	// while the index was open: pebble's first file created after it
	// fails), or replaced by another folder of the same name. OnFatal
	// should word err and end the process; should it return, the process
	// exits with status 1. nil writes err to standard error and exits
	// with status 1.
	OnFatal func(err error)

	// fs replaces the file system in tests; nil means vfs.Default.
	fs vfs.FS
}

func (o Options) vfs() vfs.FS {
	fs := o.fs
	if fs == nil {
		fs = vfs.Default
	}
	if o.Shared && o.ReadOnly {
		return unlockedFS{fs}
	}
	if o.ReadOnly && fs == vfs.Default {
		return readOnlyFS{fs}
	}
	return fs
}

// readOnlyFS is the file system of a read-only open: where the lock file
// cannot be opened for writing (a folder or a LOCK file this user may not
// write, a read-only mount), it is locked shared, for reading, so that an
// index can be queried where it cannot be written while no writer holds
// it (before, "open DIR/LOCK: permission denied").
type readOnlyFS struct{ vfs.FS }

func (f readOnlyFS) Lock(name string) (io.Closer, error) {
	c, err := f.FS.Lock(name)
	if err != nil && (errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		if rc, rerr := readLock(name); rerr == nil || !errors.Is(rerr, os.ErrNotExist) {
			return rc, rerr
		}
	}
	return c, err
}

// unlockedFS is a file system whose locks are not taken (Options.Shared).
type unlockedFS struct{ vfs.FS }

func (unlockedFS) Lock(string) (io.Closer, error) { return noLock{}, nil }

type noLock struct{}

func (noLock) Close() error { return nil }

// Store is a persistent index of document sketches. See the package
// documentation for the layout, the concurrency and the durability rules.
type Store struct {
	keyer
	dir   string
	db    *pebble.DB
	wopts *pebble.WriteOptions
	ronly bool
	ver   uint32 // the format version at open (format)

	// mu serialises writers (Add, CheckAndAdd, Remove and their batch
	// forms): a check and the add that follows it see no other writer in
	// between.
	mu  sync.Mutex
	ctr counters // guarded by mu

	docs atomic.Int64

	// post are the in-memory postings, one per band or table, rebuilt
	// from the records at Open. applied is the sequence number below which
	// every document's postings are in post (written under mu).
	post    []postings
	applied atomic.Uint64
	// ids maps a hash of each document id to its sequence number (written
	// under mu), so that a new id is known to be new without reading the
	// database.
	ids postings
	// postMu guards post and ids: readers (queries) share it; writers,
	// which also hold mu, take it only to change the tables.
	postMu sync.RWMutex

	// closeMu guards db against Close: operations hold it for reading.
	closeMu sync.RWMutex
	closed  bool

	pool sync.Pool // *scratch

	space space // the disk guard (space.go)

	// folder is the index folder's identity when it was opened: a
	// folder of the same name made later is not the index's
	// (folderGone).
	folder *folderID

	// lock is the directory lock taken by Open and released by Close (nil
	// for Create, whose database holds its own).
	lock *pebble.Lock
}

// quietLogger is pebble's logger unless Options.Logger is set: it
// discards informational messages, writes errors to standard error and
// ends the process on a fatal one, through Options.OnFatal.
type quietLogger struct {
	dir string
	// at is the folder's identity once the index is open (nil: only
	// its existence is checked).
	at      *folderID
	onFatal func(error)
}

// folderID is the identity of an index folder and of its LOCK file,
// taken when the index is opened. A folder removed and made again has
// the LOCK of no open index, and may have the number of the one
// removed, which the file system gives again (os.SameFile of the folders
// alone took the new one for the index's).
type folderID struct {
	dir string
	at  atomic.Pointer[[2]os.FileInfo] // the folder's, its LOCK's (nil if none)
}

// newFolderID returns dir's identity now.
func newFolderID(dir string) *folderID {
	f := &folderID{dir: dir}
	f.mark()
	return f
}

// mark takes the identity of the folder and of its LOCK file afresh:
// Create's LOCK is made by pebble's open, after newFolderID.
func (f *folderID) mark() {
	d, _ := os.Stat(f.dir)
	l, _ := os.Stat(filepath.Join(f.dir, "LOCK"))
	f.at.Store(&[2]os.FileInfo{d, l})
}

// replaced tells whether the folder, fi (os.Stat of it, which
// succeeded), or its LOCK file is another than the one opened.
func (f *folderID) replaced(fi os.FileInfo) bool {
	if f == nil {
		return false
	}
	at := f.at.Load()
	if at[0] != nil && !os.SameFile(fi, at[0]) {
		return true
	}
	if at[1] != nil {
		l, err := os.Stat(filepath.Join(f.dir, "LOCK"))
		return err != nil || !os.SameFile(l, at[1])
	}
	return false
}

func (quietLogger) Infof(string, ...any) {}

// Errorf writes pebble's error, unless the index folder was removed: a
// background flush or compaction then fails to create its files over and
// over ("background error: open DIR/000012.sst: no such file or
// directory"), and the store's ErrGone (Health, Close) says what
// happened.
func (l quietLogger) Errorf(format string, args ...any) {
	if l.gone() {
		return
	}
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}

// gone tells whether the index folder no longer exists, or is another
// folder than the one opened: removed and made again by someone else (a
// script's rm -rf and mkdir), which pebble goes on failing in (the files
// it reads by name are not in the new folder).
func (l quietLogger) gone() bool {
	if l.dir == "" {
		return false
	}
	fi, err := os.Stat(l.dir)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	return l.at.replaced(fi)
}

// Fatalf must not return: pebble goes on as if the failure had not
// happened (rotateWAL panics on the log file it could not create).
func (l quietLogger) Fatalf(format string, args ...any) {
	os.Exit(l.fatal(format, args...))
}

// fatal words pebble's fatal failure, hands it to onFatal and returns
// the status to exit with. A folder removed while the index was open is
// ErrGone, not pebble's words about the files it could not find there
// (as its Fatalf is called then: "open DIR/000004.log: no such file or
// directory" and the stack of the failed call).
func (l quietLogger) fatal(format string, args ...any) int {
	var err error
	if l.gone() {
		err = fmt.Errorf("%w: %s was removed while the index was open", ErrGone, l.dir)
	} else {
		err = fmt.Errorf("pebble: "+format, args...)
	}
	if l.onFatal != nil {
		l.onFatal(err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "%v\n", err)
	return 1
}

func (o Options) pebble(dir string, create bool, lock *pebble.Lock) *pebble.Options {
	po := &pebble.Options{
		Lock:             lock,
		FS:               o.vfs(),
		ErrorIfNotExists: !create,
		ErrorIfExists:    create,
		ReadOnly:         o.ReadOnly,
		Logger:           o.Logger,
	}
	if po.Logger == nil {
		po.Logger = quietLogger{dir: dir, at: newFolderID(dir), onFatal: o.OnFatal}
	}
	cs := o.CacheSize
	if cs <= 0 {
		cs = DefaultCacheSize
	}
	po.CacheSize = cs
	po.MemTableSize = o.MemTableSize
	if po.MemTableSize == 0 {
		po.MemTableSize = DefaultMemTableSize
	}
	po.Comparer = comparer
	for i := range po.Levels {
		// Postings and signatures are hashes: compression gains nothing
		// and decompression would cost most of a query's time. Bloom
		// filters over key prefixes let a posting seek skip every table
		// that lacks the band key, which is almost all of them.
		po.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return po
}

// Create makes a new index in dir (created if missing) for the sketch
// specification sp (method sketch.MinHash or sketch.SimHash), whose zero
// values are resolved to the defaults and stored. Invalid parameters, and
// a MinHash banding given by hand below MinBandingRecall (ErrBanding),
// are ErrParams; an existing index there is ErrExists.
func Create(dir string, sp sketch.Spec, opts Options) (*Store, error) {
	rp, err := resolveNew(sp)
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return nil, fmt.Errorf("%w: cannot create a read-only index", ErrParams)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", dir, err)
	}
	po := opts.pebble(dir, true, nil)
	db, err := pebble.Open(dir, po)
	if l, ok := po.Logger.(quietLogger); ok && err == nil {
		l.at.mark() // with the LOCK file pebble made
	}
	if err != nil {
		if errors.Is(err, pebble.ErrDBAlreadyExists) || errors.Is(err, pebble.ErrDBNotPristine) {
			return nil, fmt.Errorf("%w: %s", ErrExists, dir)
		}
		return nil, fmt.Errorf("store: create %s: %w", dir, err)
	}
	pj, err := rp.MarshalJSON()
	if err != nil {
		db.Close()
		return nil, err
	}
	ext, err := extractionAtCreate(rp, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s, err := newStore(dir, db, rp, counters{}, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	s.extraction = ext
	ver := uint32(formatNoSets)
	if rp.Method == sketch.MinHash && !opts.EstimateOnly {
		ver = formatBare
		s.sets.Store(true)
		s.bare.Store(true)
	}
	s.ver = ver
	b := db.NewBatch()
	b.Set(keyParams, pj, nil)
	b.Set(keyCounters, counters{}.append(nil), nil)
	b.Set(keyVersion, le32(ver), nil)
	if ext != 0 {
		b.Set(keyExtraction, le32(uint32(ext)), nil)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: create %s: %w", dir, err)
	}
	return s, nil
}

// openErr words a failure to open the database; a lock held by another
// opener is ErrLocked.
func openErr(dir string, err error) error {
	// Another process's lock fails flock with EAGAIN; this process's own
	// is refused by pebble itself ("lock held by current process").
	if strings.Contains(err.Error(), "lock held by current process") {
		return fmt.Errorf("%w: %s (in this process: close the other handle first)", ErrLocked, dir)
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%w: %s (in another process: a running neardup serve or index command holds it; query a served index through its HTTP API)", ErrLocked, dir)
	}
	return fmt.Errorf("store: open %s: %w", dir, err)
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }

// Open opens the index in dir. A directory without an index is ErrNotIndex;
// an index written by a newer version of the format is refused with
// ErrVersion and left untouched.
func Open(dir string, opts Options) (*Store, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotIndex, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a file", ErrNotIndex, dir)
	}
	// A directory without a database is refused before the lock, which
	// would leave a LOCK file in it (a mistyped --index).
	if !hasDatabase(dir) {
		return nil, fmt.Errorf("%w: %s", ErrNotIndex, dir)
	}
	// The directory lock is taken first and held until Close, across the
	// read-only view and the writable database: no other process can
	// write in between.
	lock, err := pebble.LockDirectory(dir, opts.vfs())
	if err != nil {
		return nil, openErr(dir, err)
	}
	s, err := open(dir, opts, lock)
	if err != nil {
		lock.Close()
		return nil, err
	}
	s.lock = lock
	return s, nil
}

// hasDatabase reports whether dir holds a pebble database's manifest (or
// cannot be listed: then opening it says why).
func hasDatabase(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker.manifest.") || n == "CURRENT" {
			return true
		}
	}
	return false
}

// testHookRebuilt, when set by a test, runs between the read-only rebuild
// and the writable open.
var testHookRebuilt func()

// testHookChunk, when set by a test, is given the number of records and
// the bytes of each chunk that rebuild decodes.
var testHookChunk func(records, bytes int)

func open(dir string, opts Options, lock *pebble.Lock) (*Store, error) {
	// Read the version and parameters read-only first, so that a newer
	// index is not touched by this program's pebble (which could otherwise
	// replay or rewrite files).
	ro := opts
	ro.ReadOnly = true
	ro.CacheSize = min(opts.CacheSize, rebuildCacheSize)
	if ro.CacheSize <= 0 {
		ro.CacheSize = rebuildCacheSize
	}
	rdb, err := pebble.Open(dir, ro.pebble(dir, false, lock))
	if err != nil {
		if errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotIndex, dir)
		}
		if strings.Contains(err.Error(), "comparer name") {
			// A pebble database, but not one of ours.
			return nil, fmt.Errorf("%w: %s: %v", ErrNotIndex, dir, err)
		}
		return nil, openErr(dir, err)
	}
	p, ctr, ver, err := readMeta(rdb, dir)
	ext := 0
	if err == nil {
		ext, err = readExtraction(rdb, dir)
	}
	var s *Store
	if err == nil {
		// The postings are rebuilt from this read-only view (the same data
		// the writable database will open with: the write-ahead log is
		// replayed by both), so that the scan of every record does not fill
		// the block cache of the index.
		s, err = newStore(dir, nil, p, ctr, opts)
		if err != nil {
			err = fmt.Errorf("store: open %s: %w", dir, err)
		} else {
			s.extraction = ext
			if err = s.rebuild(rdb); err != nil {
				s.freeTables()
				err = fmt.Errorf("store: open %s: %w", dir, err)
			}
		}
	}
	if cerr := rdb.Close(); err == nil && cerr != nil {
		s.freeTables()
		err = fmt.Errorf("store: open %s: %w", dir, cerr)
	}
	if err != nil {
		return nil, err
	}
	if testHookRebuilt != nil {
		testHookRebuilt()
	}
	wopts := opts
	var full error
	if !opts.ReadOnly {
		if full = replayRoom(dir, opts.minFree()); full != nil {
			wopts.ReadOnly = true
		}
	}
	db, err := pebble.Open(dir, wopts.pebble(dir, false, lock))
	if err != nil {
		s.freeTables()
		return nil, openErr(dir, err)
	}
	if full != nil {
		s.ronly, s.space.openedFull = true, full
	}
	// The postings were rebuilt from the counters read before: they must
	// still be the database's.
	if p2, ctr2, _, err := readMeta(db, dir); err != nil || ctr2 != ctr || CheckSpec(p2, p) != nil {
		s.freeTables()
		db.Close()
		if err == nil {
			err = fmt.Errorf("%w: %s changed between the rebuild of the postings and the open (counters %+v, then %+v)", ErrCorrupt, dir, ctr, ctr2)
		}
		return nil, err
	}
	if ver < formatNoSets && !wopts.ReadOnly {
		if err := migrate(db, ver, p); err != nil {
			s.freeTables()
			db.Close()
			return nil, fmt.Errorf("store: open %s: upgrading format version %d to %d: %w", dir, ver, formatNoSets, err)
		}
		ver = formatNoSets
	}
	s.db = db
	s.ver = ver
	s.sets.Store(ver >= formatSets)
	s.bare.Store(ver >= formatBare)
	return s, nil
}

// migrate upgrades an index of an older format version to version 3 (an
// index without shingle sets; Upgrade makes it 4) in one synced batch: version 1 stored its postings as 'p' keys, which are
// deleted (and the range compacted away afterwards); versions 1 and 2
// stored their parameters in the form before package sketch, which is
// rewritten as the serialised sketch.Spec (p, as read, so the meaning is
// unchanged: SimHash weights of those indexes are counts). Ids and records
// are unchanged.
func migrate(db *pebble.DB, ver uint32, p sketch.Spec) error {
	if ver < 1 || ver >= formatNoSets {
		return fmt.Errorf("%w: no upgrade from version %d", ErrVersion, ver)
	}
	js, err := p.MarshalJSON()
	if err != nil {
		return err
	}
	b := db.NewBatch()
	defer b.Close()
	lo, hi := []byte{prefixPosting}, []byte{prefixPosting + 1}
	if ver == 1 {
		if err := b.DeleteRange(lo, hi, nil); err != nil {
			return err
		}
	}
	if err := b.Set(keyParams, js, nil); err != nil {
		return err
	}
	if err := b.Set(keyVersion, le32(formatNoSets), nil); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	if ver == 1 {
		return db.Compact(context.Background(), lo, hi, false)
	}
	return nil
}

func getValue(db *pebble.DB, key []byte) ([]byte, bool, error) {
	v, c, err := db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := bytes.Clone(v)
	c.Close()
	return out, true, nil
}

func readMeta(db *pebble.DB, dir string) (sketch.Spec, counters, uint32, error) {
	v, ok, err := getValue(db, keyVersion)
	if err != nil {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("store: open %s: %w", dir, err)
	}
	if !ok {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("%w: %s has no version key", ErrNotIndex, dir)
	}
	ver, err := decodeVersion(v)
	if err != nil {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("store: open %s: %w", dir, err)
	}
	if ver > FormatVersion {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("%w: %s has format version %d, this program reads up to %d", ErrVersion, dir, ver, FormatVersion)
	}
	if ver == 0 {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("%w: %s: format version 0", ErrCorrupt, dir)
	}
	pv, ok, err := getValue(db, keyParams)
	if err != nil || !ok {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("%w: %s: parameters missing (%v)", ErrCorrupt, dir, err)
	}
	p, err := decodeSpec(pv)
	if err != nil {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("store: open %s: %w", dir, err)
	}
	cv, ok, err := getValue(db, keyCounters)
	if err != nil || !ok {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("%w: %s: counters missing (%v)", ErrCorrupt, dir, err)
	}
	ctr, err := decodeCounters(cv)
	if err != nil {
		return sketch.Spec{}, counters{}, 0, fmt.Errorf("store: open %s: %w", dir, err)
	}
	return p, ctr, ver, nil
}

// readExtraction reads the extraction version of an index (0: none
// recorded).
func readExtraction(db *pebble.DB, dir string) (int, error) {
	v, ok, err := getValue(db, keyExtraction)
	if err != nil {
		return 0, fmt.Errorf("store: open %s: %w", dir, err)
	}
	if !ok {
		return 0, nil
	}
	ext, err := decodeExtraction(v)
	if err != nil {
		return 0, fmt.Errorf("store: open %s: %w", dir, err)
	}
	return ext, nil
}

func newStore(dir string, db *pebble.DB, p sketch.Spec, ctr counters, opts Options) (*Store, error) {
	k, err := newKeyer(p)
	if err != nil {
		return nil, err
	}
	s := &Store{keyer: k, dir: dir, db: db, ctr: ctr, wopts: pebble.Sync, ronly: opts.ReadOnly}
	s.folder = newFolderID(dir)
	if opts.NoSync {
		s.wopts = pebble.NoSync
	}
	s.docs.Store(int64(ctr.docs))
	s.post = make([]postings, s.tables)
	for t := range s.post {
		s.post[t].skew = skewFor(t, s.tables+1)
	}
	s.ids.skew = skewFor(s.tables, s.tables+1)
	s.applied.Store(ctr.next)
	s.pool.New = func() any { return &scratch{} }
	s.space.minFree = opts.minFree()
	return s, nil
}

// rebuildCacheSize is the block cache of the read-only view that Open
// rebuilds the postings from.
const rebuildCacheSize = 8 << 20

// rebuild fills the in-memory postings from the records of db, checking
// them against the counters.
func (s *Store) rebuild(db *pebble.DB) error {
	for t := range s.post {
		s.post[t].reserve(int(min(s.ctr.docs, maxSeq)))
	}
	s.ids.reserve(int(min(s.ctr.docs, maxSeq)))
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRecord}, UpperBound: []byte{prefixRecord + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	var c rebuildChunk
	var n uint64
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != 9 {
			return fmt.Errorf("%w: record key of %d bytes", ErrCorrupt, len(k))
		}
		seq := beUint64(k[1:])
		if seq >= s.ctr.next {
			return fmt.Errorf("%w: record %d at or above the next sequence number %d", ErrCorrupt, seq, s.ctr.next)
		}
		if seq > maxSeq {
			return fmt.Errorf("%w: record %d: sequence numbers above %d cannot be indexed", ErrFull, seq, uint64(maxSeq))
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		n++
		c.seqs = append(c.seqs, seq)
		c.ends = append(c.ends, len(c.buf)+len(v))
		c.buf = append(c.buf, v...)
		if len(c.seqs) == rebuildChunkLen || len(c.buf) >= rebuildChunkBytes {
			if err := s.rebuildChunk(&c); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := s.rebuildChunk(&c); err != nil {
		return err
	}
	if n != s.ctr.docs {
		return fmt.Errorf("%w: %d records, the counters say %d documents", ErrCorrupt, n, s.ctr.docs)
	}
	return nil
}

// rebuildChunkLen is the number of records rebuild decodes at once, in
// parallel: a bare record's signature is computed from its set (about 5
// us a 1 KB document), which would make the open of a large index several
// times slower on one core. rebuildChunkBytes bounds the chunk's copy of
// the records' values: a chunk of 4,096 long documents' sets (23 KB each
// in wiki-slice) held 94 MB, grown by doubling, and made most of the
// memory of an open (docs/benchmarks.md, "The open of an index").
// rebuildWorkerBytes is the least a worker is given of a chunk's bytes
// (and rebuildWorkerLen of its records), so that small chunks are not
// spread over goroutines that cost more than they do.
const (
	rebuildChunkLen    = 4096
	rebuildChunkBytes  = 4 << 20
	rebuildWorkerLen   = 256
	rebuildWorkerBytes = 256 << 10
)

// rebuildChunk holds records read by rebuild: their sequence numbers and
// values (buf[ends[i-1]:ends[i]]), then what decoding them gave (the id
// hash, and the tables' keys, tables a record, or none when it is empty).
type rebuildChunk struct {
	seqs  []uint64
	ends  []int
	buf   []byte
	ids   []uint64
	keys  []uint64
	empty []bool
	recs  []record // the workers' records, kept for their buffers
}

// rebuildChunk decodes the records of c on every core, then inserts them
// into the in-memory tables in order, and empties c.
func (s *Store) rebuildChunk(c *rebuildChunk) error {
	m := len(c.seqs)
	if m == 0 {
		return nil
	}
	if testHookChunk != nil {
		testHookChunk(m, len(c.buf))
	}
	c.ids = slices.Grow(c.ids[:0], m)[:m]
	c.empty = slices.Grow(c.empty[:0], m)[:m]
	c.keys = slices.Grow(c.keys[:0], m*s.tables)[:m*s.tables]
	workers := min(runtime.GOMAXPROCS(0), m, max((m+rebuildWorkerLen-1)/rebuildWorkerLen, (len(c.buf)+rebuildWorkerBytes-1)/rebuildWorkerBytes))
	if len(c.recs) < workers {
		c.recs = append(c.recs, make([]record, workers-len(c.recs))...)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rec := &c.recs[w]
			for i := w * m / workers; i < (w+1)*m/workers; i++ {
				lo := 0
				if i > 0 {
					lo = c.ends[i-1]
				}
				if err := s.readRecord(rec, c.buf[lo:c.ends[i]]); err != nil {
					errs[w] = fmt.Errorf("record %d: %w", c.seqs[i], err)
					return
				}
				c.ids[i] = xxh3.Hash(rec.id) // = idHash(string(rec.id)), without the copy
				c.empty[i] = rec.flags&flagEmpty != 0
				if !c.empty[i] {
					// In place: the record's keys, tables of them.
					if ks := s.appendKeys(c.keys[i*s.tables:i*s.tables:(i+1)*s.tables], &sketch.Sketch{Sig: rec.sig, FP: rec.fp}); len(ks) != s.tables {
						errs[w] = fmt.Errorf("%w: record %d has %d keys, want %d", ErrCorrupt, c.seqs[i], len(ks), s.tables)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	for i, seq := range c.seqs {
		s.ids.insert(c.ids[i], seq)
		if c.empty[i] {
			continue
		}
		for t, key := range c.keys[i*s.tables : (i+1)*s.tables] {
			s.post[t].insert(key, seq)
		}
	}
	c.seqs, c.ends, c.buf = c.seqs[:0], c.ends[:0], c.buf[:0]
	return nil
}

// freeTables releases the in-memory tables' memory. Nothing may use them
// afterwards.
func (s *Store) freeTables() {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	for t := range s.post {
		s.post[t].free()
	}
	s.ids.free()
}

// postingsBytes is the memory of the in-memory postings.
func (s *Store) postingsBytes() uint64 {
	s.postMu.RLock()
	defer s.postMu.RUnlock()
	n := uint64(s.ids.bytes())
	for t := range s.post {
		n += uint64(s.post[t].bytes())
	}
	return n
}

// Spec returns the index's sketch specification, resolved.
func (s *Store) Spec() sketch.Spec { return s.spec }

// NewSketcher returns a Sketcher with the index's parameters.
func (s *Store) NewSketcher() (*Sketcher, error) { return newSketcher(s.spec, s.sets.Load()) }

// Len returns the number of documents in the index.
func (s *Store) Len() int64 { return s.docs.Load() }

// Dir returns the index directory.
func (s *Store) Dir() string { return s.dir }

// Match is a document found by a query.
type Match struct {
	ID string `json:"id"`
	// Similarity is the Jaccard similarity (MinHash: exact when Exact,
	// else estimated, the fraction of equal slots) or the fraction of
	// equal fingerprint bits (SimHash: 1 - Distance/Bits).
	Similarity float64 `json:"similarity"`
	// Distance is the Hamming distance for SimHash, -1 for MinHash.
	Distance int `json:"distance"`
	// Exact tells that Similarity is the exact Jaccard similarity of the
	// two documents' shingle sets (MinHash, an index that keeps sets),
	// not the estimate.
	Exact bool `json:"exact,omitempty"`
}

// Doc is a document of a batch: its id and sketch.
type Doc struct {
	ID     string
	Sketch sketch.Sketch
}

// Result is the outcome of one document of a write.
type Result struct {
	// Matches are the duplicates found by CheckAndAdd, best first (empty
	// for Add).
	Matches []Match
	// Added tells whether the document was added.
	Added bool
	// Err is this document's own error: ErrInvalidID, ErrIncompatible,
	// ErrDuplicateID. The rest of the batch goes on without it.
	Err error
}

// scratch is per-operation reusable memory.
type scratch struct {
	touch  uint64 // keeps candidates' prefetching loads
	keys   []uint64
	seqs   []uint64
	idSeqs []uint64
	key    []byte
	val    []byte
	rec    record
	recBuf []byte
}

func (s *Store) acquire() (*scratch, error) {
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return nil, ErrClosed
	}
	return s.pool.Get().(*scratch), nil
}

func (s *Store) release(sc *scratch) {
	s.pool.Put(sc)
	s.closeMu.RUnlock()
}

// checkID validates a document id.
func checkID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidID, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidID)
	}
	return nil
}

// candidates sets sc.seqs to the sequence numbers in [lo, hi) of the
// documents that share a band or table key with sk (sc.keys, which it
// sets), each once, in increasing order. A few may share only a tag (see
// postings): matches verifies every candidate.
func (s *Store) candidates(sc *scratch, sk *sketch.Sketch, lo, hi uint64) {
	sc.seqs = sc.seqs[:0]
	if sk.Empty {
		return
	}
	sc.keys = s.appendKeys(sc.keys[:0], sk)
	s.lookup(sc, lo, hi)
}

// lookup sets sc.seqs to the sequence numbers in [lo, hi) of the
// documents that share a key of sc.keys, each once, in increasing order
// (candidates).
func (s *Store) lookup(sc *scratch, lo, hi uint64) {
	sc.seqs = sc.seqs[:0]
	if len(sc.keys) == 0 {
		return
	}
	s.postMu.RLock()
	// Load every table's home slot first: the loads are independent, so
	// their cache misses overlap, and the lookups then find them cached.
	var touch uint64
	for t, k := range sc.keys {
		touch += s.post[t].first(k)
	}
	sc.touch = touch
	for t, k := range sc.keys {
		sc.seqs = s.post[t].lookup(sc.seqs, k, lo, hi)
	}
	s.postMu.RUnlock()
	if len(sc.seqs) > 1 {
		slices.Sort(sc.seqs)
		sc.seqs = slices.Compact(sc.seqs)
	}
}

func beUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0])<<56 | uint64(b[1])<<48 | uint64(b[2])<<40 | uint64(b[3])<<32 |
		uint64(b[4])<<24 | uint64(b[5])<<16 | uint64(b[6])<<8 | uint64(b[7])
}

// loadRecord reads the record of seq into sc.rec (sc.rec.id aliases
// sc.recBuf). A missing record is errMissing.
func (s *Store) loadRecord(sc *scratch, seq uint64) error {
	sc.key = recordKey(sc.key[:0], seq)
	v, c, err := s.db.Get(sc.key)
	if err != nil {
		if errors.Is(err, pebble.ErrNotFound) {
			return errMissing
		}
		return err
	}
	sc.recBuf = append(sc.recBuf[:0], v...)
	c.Close()
	return s.readRecord(&sc.rec, sc.recBuf)
}

// errMissing is a candidate whose record is gone: a Remove ran between
// the lookup and the read.
var errMissing = errors.New("store: record removed")

// missingIsCorrupt turns errMissing for the record of an id key into
// ErrCorrupt: id and record are written and deleted together.
func missingIsCorrupt(err error, id string) error {
	if err == errMissing {
		return fmt.Errorf("%w: id %q maps to a missing record", ErrCorrupt, id)
	}
	return err
}

// matches turns the candidates sc.seqs into matches, verified against
// their records: duplicates only (every candidate sharing a key when all is
// set), best first, at most limit (0: no limit).
func (s *Store) matches(dst []Match, sc *scratch, sk *sketch.Sketch, all bool, limit int) ([]Match, error) {
	start := len(dst)
	for _, seq := range sc.seqs {
		if err := s.loadRecord(sc, seq); err != nil {
			if err == errMissing {
				continue
			}
			return dst, err
		}
		var err error
		if dst, err = s.verify(dst, sc, sk, all); err != nil {
			return dst, err
		}
	}
	return sortLimit(dst, start, limit), nil
}

// sortMatches orders best first: higher similarity, then lower distance,
// then id.
func sortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Distance, b.Distance); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// Query appends to dst the duplicates of sk in the index, best first, at
// most limit of them (0: all): MinHash documents sharing a band key with sk
// that its decision makes duplicates (see the package comment), SimHash
// documents within the Spec's Hamming distance. Query may run concurrently with
// anything else; it sees every write acknowledged before it started.
func (s *Store) Query(dst []Match, sk sketch.Sketch, limit int) ([]Match, error) {
	return s.query(dst, &sk, false, limit)
}

// Candidates appends to dst every document sharing at least one band key
// (MinHash) or table key (SimHash) with sk, with its similarity and
// distance, best first, whether or not it is a duplicate. It is what Query
// filters, exposed for tests and tuning.
func (s *Store) Candidates(dst []Match, sk sketch.Sketch) ([]Match, error) {
	return s.query(dst, &sk, true, 0)
}

func (s *Store) query(dst []Match, sk *sketch.Sketch, all bool, limit int) ([]Match, error) {
	if err := s.checkSketch(sk); err != nil {
		return dst, err
	}
	sc, err := s.acquire()
	if err != nil {
		return dst, err
	}
	defer s.release(sc)
	s.candidates(sc, sk, 0, math.MaxUint64)
	return s.matches(dst, sc, sk, all, limit)
}

// Add adds a document without checking for duplicates. An id already in
// the index is ErrDuplicateID. When Add returns nil the document is on disk
// (unless Options.NoSync).
func (s *Store) Add(id string, sk sketch.Sketch) error {
	rs, err := s.write([]Doc{{ID: id, Sketch: sk}}, false, 0)
	if err != nil {
		return err
	}
	return rs[0].Err
}

// CheckAndAdd queries the index for duplicates of sk and, when there are
// none, adds the document under id, in one atomic step: of two
// near-identical documents sent at once exactly one is added. The result
// lists the duplicates found (at most limit, 0: all) and whether the
// document was added. A document that is not a duplicate but whose id is
// in the index is ErrDuplicateID.
func (s *Store) CheckAndAdd(id string, sk sketch.Sketch, limit int) (Result, error) {
	rs, err := s.write([]Doc{{ID: id, Sketch: sk}}, true, limit)
	if err != nil {
		return Result{}, err
	}
	return rs[0], rs[0].Err
}

// AddBatch adds many documents in one write (one disk sync). Each
// document's own problem is in its Result; the error is for the batch as a
// whole (I/O, closed index), in which case none of it is acknowledged.
func (s *Store) AddBatch(docs []Doc) ([]Result, error) { return s.write(docs, false, 0) }

// CheckAndAddBatch is CheckAndAdd for many documents in one write: each
// document is checked against the index and the documents of the batch
// added before it, in order.
func (s *Store) CheckAndAddBatch(docs []Doc, limit int) ([]Result, error) {
	return s.write(docs, true, limit)
}

// idHash is the key of an id in s.ids (in memory only, never stored).
func idHash(id string) uint64 { return xxh3.HashString(id) }

// hasID tells whether id is in the index. The caller holds s.mu.
func (s *Store) hasID(sc *scratch, id string) (bool, error) {
	s.postMu.RLock()
	sc.idSeqs = s.ids.lookup(sc.idSeqs[:0], idHash(id), 0, math.MaxUint64)
	s.postMu.RUnlock()
	for _, seq := range sc.idSeqs {
		if err := s.loadRecord(sc, seq); err != nil {
			if err == errMissing {
				return false, fmt.Errorf("%w: id table points to missing record %d", ErrCorrupt, seq)
			}
			return false, err
		}
		if string(sc.rec.id) == id {
			return true, nil
		}
	}
	return false, nil
}

// parallelCheckMin is the batch size from which queryBefore checks in
// parallel.
const parallelCheckMin = 32

// queryBefore sets results[i].Matches to the duplicates of docs[i] among
// the documents with sequence numbers below snap, for the documents
// without an error. A large batch is checked by GOMAXPROCS goroutines.
func (s *Store) queryBefore(sc *scratch, docs []Doc, results []Result, snap uint64) error {
	one := func(sc *scratch, i int) (err error) {
		if results[i].Err != nil {
			return nil
		}
		s.candidates(sc, &docs[i].Sketch, 0, snap)
		results[i].Matches, err = s.matches(nil, sc, &docs[i].Sketch, false, 0)
		return err
	}
	workers := min(runtime.GOMAXPROCS(0), len(docs)/(parallelCheckMin/2))
	if len(docs) < parallelCheckMin || workers < 2 {
		for i := range docs {
			if err := one(sc, i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			sc := s.pool.Get().(*scratch)
			defer s.pool.Put(sc)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(docs) {
					return
				}
				if err := one(sc, i); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func binaryBE(dst []byte, v uint64) []byte {
	return append(dst, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// readOnlyErr is the error of a write to a read-only index: the disk-full
// error when Open made it read-only (see replayRoom).
func (s *Store) readOnlyErr() error {
	if s.space.openedFull != nil {
		return s.space.openedFull
	}
	return fmt.Errorf("store: %s is open read-only", s.dir)
}

// Remove deletes the document id: its record and all its postings. An id
// not in the index is ErrNotFound.
func (s *Store) Remove(id string) error {
	if s.ronly {
		return s.readOnlyErr()
	}
	if err := checkID(id); err != nil {
		return err
	}
	sc, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release(sc)
	s.mu.Lock()
	locked := true
	defer func() {
		if locked {
			s.mu.Unlock()
		}
	}()
	ik := idKey(nil, id)
	v, ok, err := getValue(s.db, ik)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if len(v) != 8 {
		return fmt.Errorf("%w: id %q maps to %d bytes", ErrCorrupt, id, len(v))
	}
	seq := beUint64(v)
	if err := s.loadRecord(sc, seq); err != nil {
		return missingIsCorrupt(err, id)
	}
	if string(sc.rec.id) != id {
		return fmt.Errorf("%w: id %q maps to the record of %q", ErrCorrupt, id, sc.rec.id)
	}
	b := s.db.NewBatch()
	defer b.Close()
	b.Delete(ik, nil)
	b.Delete(recordKey(nil, seq), nil)
	ctr := s.ctr
	ctr.docs--
	b.Set(keyCounters, ctr.append(nil), nil)
	if err := s.commit(b); err != nil {
		return err
	}
	if sc.rec.flags&flagEmpty == 0 {
		sk := sketch.Sketch{Sig: sc.rec.sig, FP: sc.rec.fp}
		sc.keys = s.appendKeys(sc.keys[:0], &sk)
	} else {
		sc.keys = sc.keys[:0]
	}
	s.postMu.Lock()
	s.ids.remove(idHash(id), seq)
	for t, k := range sc.keys {
		s.post[t].remove(k, seq)
	}
	s.postMu.Unlock()
	s.ctr = ctr
	s.docs.Store(int64(ctr.docs))
	locked = false
	s.mu.Unlock()
	if s.wopts.Sync {
		return s.syncWait(b)
	}
	return nil
}

// Get returns the sketch stored under id (ErrNotFound when absent), with
// its shingle set when the record keeps one. The signature and the set are
// fresh copies.
func (s *Store) Get(id string) (sketch.Sketch, error) {
	if err := checkID(id); err != nil {
		return sketch.Sketch{}, err
	}
	sc, err := s.acquire()
	if err != nil {
		return sketch.Sketch{}, err
	}
	defer s.release(sc)
	v, ok, err := getValue(s.db, idKey(nil, id))
	if err != nil {
		return sketch.Sketch{}, err
	}
	if !ok {
		return sketch.Sketch{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if len(v) != 8 {
		return sketch.Sketch{}, fmt.Errorf("%w: id %q maps to %d bytes", ErrCorrupt, id, len(v))
	}
	if err := s.loadRecord(sc, beUint64(v)); err != nil {
		return sketch.Sketch{}, missingIsCorrupt(err, id)
	}
	sk, err := recordSketch(&sc.rec)
	if err != nil {
		return sketch.Sketch{}, fmt.Errorf("id %q: %w", id, err)
	}
	sk.Sig, sk.Set = slices.Clone(sk.Sig), slices.Clone(sk.Set)
	return sk, nil
}

// Each calls fn with every document of the index in the order they were
// added, stopping at the first error, with their shingle sets where the
// records keep them. The sketch's Sig and Set are reused between calls;
// an empty document's sketch is Empty, without Sig (package sketch's
// rule). Writes concurrent with Each may or may not be seen.
func (s *Store) Each(fn func(id string, sk sketch.Sketch) error) error {
	sc, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release(sc)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRecord}, UpperBound: []byte{prefixRecord + 1}})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if len(it.Key()) != 9 {
			return fmt.Errorf("%w: record key of %d bytes", ErrCorrupt, len(it.Key()))
		}
		if err := s.readRecord(&sc.rec, v); err != nil {
			return err
		}
		sk, err := recordSketch(&sc.rec)
		if err != nil {
			return fmt.Errorf("record of %q: %w", sc.rec.id, err)
		}
		if s.spec.Method != sketch.MinHash {
			sk.Sig = nil
		}
		if err := fn(string(sc.rec.id), sk); err != nil {
			return err
		}
	}
	return it.Error()
}

// Stats describes an index.
type Stats struct {
	// Dir is the index directory, or its URL (without password) for Redis.
	Dir string `json:"dir,omitempty"`
	// Backend is "redis" for an index in Redis, empty for the embedded one.
	Backend       string `json:"backend,omitempty"`
	FormatVersion int    `json:"format_version"`
	// Sets tells that the index keeps its MinHash documents' shingle sets
	// and decides candidates by their exact Jaccard similarity (dedup's
	// tiered join); false for an estimate-only index (made with
	// EstimateOnly or before sets were kept: Upgrade adds them).
	Sets bool `json:"sets"`
	// Extraction is the text.MainVersion that extracted the pages of an
	// index of main content (Extraction); 0, left out, when none was
	// recorded.
	Extraction int `json:"extraction,omitempty"`
	// Spec is the index's sketch specification, resolved.
	Spec        sketch.Spec `json:"params"`
	Docs        int64       `json:"docs"`
	Tables      int         `json:"tables"`
	DiskBytes   uint64      `json:"disk_bytes"`
	BytesPerDoc float64     `json:"bytes_per_doc"`
	// DiskFreeBytes is the free space of the index's file system, and
	// MinFreeBytes the part of it writes must leave (Options.MinFreeBytes;
	// 0: no check).
	DiskFreeBytes int64 `json:"disk_free_bytes"`
	MinFreeBytes  int64 `json:"min_free_bytes"`
	// PostingsBytes is the memory of the in-memory postings, which grows
	// with the documents (PostingsBytesPerDoc, about 8 bytes per slot at
	// 55% to 80% load per band or table); the block cache and memtables
	// (CacheBytes, MemTableBytes) are bounded by Options.
	PostingsBytes       uint64  `json:"postings_bytes"`
	PostingsBytesPerDoc float64 `json:"postings_bytes_per_doc"`
	CacheBytes          int64   `json:"cache_bytes"`
	CacheHits           int64   `json:"cache_hits"`
	CacheMisses         int64   `json:"cache_misses"`
	MemTableBytes       uint64  `json:"memtable_bytes"`
	Compactions         int64   `json:"compactions"`
	ReadAmp             int     `json:"read_amplification"`
	// RedisUsedBytes is the memory of the Redis servers of a Redis index
	// (used_memory summed over the masters: all their data).
	RedisUsedBytes uint64 `json:"redis_used_bytes,omitempty"`
	// RedisDurability is what the masters of a Redis index persist
	// (RedisDurability's values; the weakest of the masters').
	RedisDurability string `json:"redis_durability,omitempty"`
	// RedisSeq is a Redis index's last sequence number given to a
	// document (docs/format/redis.md, seq): every add raises it and
	// nothing lowers it, so with Docs it tells a state of the index from
	// a later one, a remove followed by an add included (Docs alone does
	// not).
	RedisSeq uint64 `json:"redis_seq,omitempty"`
}

// FolderBytes is the size of the files in an index folder dir (which has
// no subfolders): what it holds on disk now, where pebble's usage figure
// also counts the files a compaction made obsolete until their deletion
// in the background.
func FolderBytes(dir string) (int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n, nil
}

// Stats returns the index's statistics. DiskBytes is the folder's bytes
// (FolderBytes): the write-ahead log included, files already deleted not.
func (s *Store) Stats() (Stats, error) {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return Stats{}, ErrClosed
	}
	m := s.db.Metrics()
	st := Stats{
		Dir: s.dir, FormatVersion: s.format(), Sets: s.sets.Load(), Extraction: s.extraction, Spec: s.spec, Docs: s.docs.Load(), Tables: s.tables,
		DiskBytes: m.DiskSpaceUsage(), CacheBytes: m.BlockCache.Size, CacheHits: m.BlockCache.Hits,
		CacheMisses: m.BlockCache.Misses, MemTableBytes: m.MemTable.Size, Compactions: m.Compact.Count,
		ReadAmp: m.ReadAmp(),
	}
	if n, err := FolderBytes(s.dir); err == nil {
		st.DiskBytes = uint64(n)
	}
	st.PostingsBytes = s.postingsBytes()
	st.MinFreeBytes = s.space.minFree
	if free, err := freeBytes(s.dir); err == nil {
		st.DiskFreeBytes = free
	}
	if st.Docs > 0 {
		st.BytesPerDoc = float64(st.DiskBytes) / float64(st.Docs)
		st.PostingsBytesPerDoc = float64(st.PostingsBytes) / float64(st.Docs)
	}
	return st, nil
}

// Compact flushes the memtable and compacts the whole index, reclaiming the
// space of removed documents. It may run while queries and writes go on.
func (s *Store) Compact(ctx context.Context) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.ronly {
		return s.readOnlyErr()
	}
	if err := s.Health(); err != nil {
		return err
	}
	if err := s.db.Flush(); err != nil {
		return err
	}
	return s.db.Compact(ctx, []byte{0x00}, []byte{0xff}, true)
}

// Flush writes the memtable to disk and syncs it, so that everything
// written so far (even with NoSync) survives a crash.
func (s *Store) Flush() error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if s.ronly {
		return nil
	}
	if err := s.Health(); err != nil {
		return err
	}
	return s.db.Flush()
}

// Close flushes and closes the index. Operations still running finish
// first; later ones return ErrClosed.
func (s *Store) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	if err := s.failure(); err != nil {
		// Pebble's commit pipeline is stuck (see space.go) and its Close
		// would wait for it forever; the next process replays the log.
		s.freeTables()
		return err
	}
	var err error
	if s.folderGone() && !s.ronly {
		// The folder was removed while the index was open (rm -rf):
		// a flush would create files in a folder that is gone, which
		// pebble takes for a fatal error, or in the folder made again
		// in its place, which holds none of the index. What was written
		// is lost.
		err = fmt.Errorf("%w: %s was removed while the index was open", ErrGone, s.dir)
	} else if !s.ronly && s.checkSpace(0) == nil {
		// On a full disk the memtables stay in the write-ahead log,
		// which the next Open replays, rather than retrying a flush
		// that cannot succeed.
		err = s.db.Flush()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if s.lock != nil {
		if cerr := s.lock.Close(); err == nil {
			err = cerr
		}
	}
	s.freeTables()
	return err
}

var _ io.Closer = (*Store)(nil)

// folderGone tells whether the index folder cannot be read, or is another
// than the one opened (removed and made again while the index was open).
func (s *Store) folderGone() bool {
	fi, err := os.Stat(s.dir)
	return err != nil || s.folder.replaced(fi)
}

// ErrGone is an index whose folder was removed while it was open, or
// removed and made again (another folder of the same name, which holds
// none of the index): Close does not flush what was written, which is
// lost.
var ErrGone = errors.New("store: index folder removed")

// format is the index's format version: 5 once it keeps sets and may
// write bare records, 4 when it keeps sets only, else the version it was
// opened with.
func (s *Store) format() int {
	switch {
	case s.bare.Load():
		return formatBare
	case s.sets.Load():
		return formatSets
	}
	return int(s.ver)
}
