package store

import (
	"errors"
	"github.com/neardup/neardup/sketch"
	"strings"
)

// Index is what a server and the index commands need of an index, whatever
// holds it: the embedded Store (a directory) or a Redis index (a Redis
// server or Redis Cluster shared by many processes). Both key, verify and
// store the same sketches (keyer), so a document is a duplicate in one
// exactly when it is in the other.
type Index interface {
	// Spec returns the index's sketch specification, resolved.
	Spec() sketch.Spec
	// NewSketcher returns a Sketcher with the index's parameters.
	NewSketcher() (*Sketcher, error)
	// Extraction returns the text.MainVersion that extracted the pages
	// of an index of main content (MainContent), recorded at its
	// creation; 0 when none was recorded.
	Extraction() int
	// Len returns the number of documents.
	Len() int64
	Query(dst []Match, sk sketch.Sketch, limit int) ([]Match, error)
	Add(id string, sk sketch.Sketch) error
	CheckAndAdd(id string, sk sketch.Sketch, limit int) (Result, error)
	AddBatch(docs []Doc) ([]Result, error)
	CheckAndAddBatch(docs []Doc, limit int) ([]Result, error)
	Remove(id string) error
	Get(id string) (sketch.Sketch, error)
	Each(fn func(id string, sk sketch.Sketch) error) error
	Stats() (Stats, error)
	// Upgrade makes an estimate-only index keep shingle sets, and gives
	// the documents of docs theirs (Store.Upgrade).
	Upgrade(docs []Doc) (UpgradeResult, error)
	// NewBatchWrite returns an empty batch write given its documents a
	// chunk at a time (Store.NewWrite, Redis.NewWrite): an add, or a
	// check-and-add when check is set.
	NewBatchWrite(check bool, limit int) (BatchWrite, error)
	// Health is nil when writes are accepted.
	Health() error
	// Status returns Len and Health for /healthz without waiting on a
	// backend busy with other writers (Redis.Status).
	Status() (int64, error)
	Close() error
}

// BatchWrite is one atomic batch write of an Index (AddBatch,
// CheckAndAddBatch) given its documents a chunk at a time: *Write and
// *RedisWrite. Add takes a chunk, after which its sketches are no longer
// needed; Held is the memory the write keeps of its chunks (records and
// keys); Commit writes them all or none and returns the results AddBatch
// or CheckAndAddBatch of all the chunks in order would.
type BatchWrite interface {
	Add(docs []Doc) error
	Held() int
	Commit() ([]Result, error)
}

var (
	_ BatchWrite = (*Write)(nil)
	_ BatchWrite = (*RedisWrite)(nil)
	_ Index      = (*Store)(nil)
	_ Index      = (*Redis)(nil)
)

// IsURL tells whether an index location is a Redis URL (redis://,
// rediss://, redis+cluster://) rather than a directory.
func IsURL(loc string) bool {
	for _, s := range []string{"redis://", "rediss://", "redis+cluster://", "rediss+cluster://"} {
		if strings.HasPrefix(loc, s) {
			return true
		}
	}
	return false
}

// OpenIndex opens the index at loc: a Redis URL (OpenRedis) or a
// directory (Open).
func OpenIndex(loc string, opts Options) (Index, error) {
	if IsURL(loc) {
		return OpenRedis(loc, opts)
	}
	s, err := Open(loc, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// CreateIndex creates an index at loc: a Redis URL (CreateRedis) or a
// directory (Create).
func CreateIndex(loc string, sp sketch.Spec, opts Options) (Index, error) {
	if IsURL(loc) {
		return CreateRedis(loc, sp, opts)
	}
	s, err := Create(loc, sp, opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ErrUnreachable is an index server (Redis) that does not answer.
var ErrUnreachable = errors.New("store: index server unreachable")
