// Package store is a persistent, incremental index of near-duplicate
// sketches for documents that arrive one at a time: a crawler or a news
// aggregator asks, for each new document, whether it near-duplicates one
// already seen, and adds it when it does not (seed 000 section 7; seed 004;
// Manku, Jain and Das Sarma, "Detecting near-duplicates for web crawling",
// WWW 2007, online mode). Nothing is recomputed when documents arrive, and
// the index survives restarts. It is stored in an embedded
// github.com/cockroachdb/pebble/v2 database.
//
// # Methods and parameters
//
// An index holds one method, chosen at Create and stored with all its
// parameters: a sketch.Spec of method sketch.MinHash or sketch.SimHash,
// whose zero values are the defaults of package sketch (sketch.Default).
// It says the text normalisation, the shingles and
//
//   - MinHash (Broder 1997) with LSH banding: K = MinHash.NumPerm slots
//     (sketch.DefaultNumPerm, of one-permutation hashing with
//     densification unless MinHash.Family says otherwise; indexes keep the
//     family they were created with) cut into Bands bands of Rows rows
//     (by default the banding lsh.DefaultParams chooses for the threshold;
//     indexes made before keep 16 x 8); every band's 64-bit key
//     (lsh.Params.AppendKeys) is a posting. Two
//     documents are candidates when they share a band key, which for
//     Jaccard similarity s happens with probability 1 - (1 - s^r)^b
//     (0.953 at s = 0.8 and 0.9997 at s = 0.9 with 13 x 7). The index keeps
//     each document's shingle set (sketch.Sketch.Set, Rice-coded in its record)
//     and decides a candidate as dedup's default join does
//     (sketch.Spec.DecideLeader): an estimate (the fraction of equal slots,
//     standard error at most 0.044 at K = 128) more than three standard
//     errors below Threshold (sketch.DefaultThreshold) rejects it, and
//     otherwise it is a duplicate when the exact Jaccard similarity of the
//     two sets is at least Threshold (Match.Exact). CheckAndAdd over a corpus in input
//     order therefore keeps exactly what dedup --cluster leader --keep
//     first keeps. An index created with Options.EstimateOnly, and every
//     index made before sets were kept, decides by the estimate alone (at
//     least Threshold); Upgrade gives it sets.
//   - SimHash (Charikar 2002) with Manku's permuted tables: SimHash.Bits-bit
//     fingerprints (sketch.DefaultBits) of shingles, each distinct one
//     weighing 1 by default (SimHash.Weights: set, count, sublinear or
//     tfidf), cut into Blocks blocks; each choice of Blocks - Distance
//     blocks is a table key. Every fingerprint within Hamming distance
//     Distance (sketch.DefaultDistance) shares at least one table key with
//     the query, so the search is exact; a duplicate is a document within
//     Distance.
//
// Sketcher turns a text into a sketch.Sketch (the one sketch type of
// neardup, which dedup's methods also make) with the stored Spec; an index
// refuses sketches of another method or size with ErrIncompatible, and
// CheckSpec compares a Spec a caller asks for with the stored one. The
// settings that concern only the index (memory, durability, whether it
// keeps shingle sets) are Options.
// Documents without shingles are stored but never match (sketch.Sketch.Empty);
// their records keep a zero sketch.
//
// # Operations
//
// Add, Query (duplicates best first), CheckAndAdd (query, then add when no
// duplicate was found, atomically), their batch forms AddBatch and
// CheckAndAddBatch (and Write, the same batch write given its documents a
// chunk at a time, so that their sketches need not be held all at once),
// Remove, Get, Each, Stats, Upgrade and Compact; a
// Pipeline sketches batches of texts in parallel and queries or adds them
// (the add and query pipeline of the index commands and the Python
// binding). A query costs one in-memory lookup per band or table (no disk
// access) plus one record read per candidate, which verifies it: the
// decision (above) or the distance is computed from the stored record, so
// the results are exactly those of a brute-force scan over the documents
// sharing a key.
//
// # Postings in memory
//
// The postings (band or table key -> document) are not stored: they are
// kept in memory, in one open-addressing hash table per band or table, and
// rebuilt from the records when the index is opened (about 3 s per million
// documents). A slot is 8 bytes, a 32-bit tag of the key and a 32-bit
// sequence number, so an index holds at most 2^32 - 2 adds over its life
// (ErrFull beyond). Two keys with the same tag only add a candidate, which
// the verification removes. A further table maps id hashes to sequence
// numbers, so that a new id is known to be new without a disk read.
//
// # On disk
//
// The key layout, value encodings and the version key are specified byte by
// byte in docs/format/store.md. The format version is FormatVersion; Open
// refuses a newer one (ErrVersion) without writing to it. An index of
// version 1, which stored the postings, is upgraded when opened for
// writing (its postings are deleted); read-only, it is used as it is.
// An index of pages' main content (MainContent) also records the
// text.MainVersion that extracted them (Extraction; extraction.go).
//
// # Durability
//
// Every write is one pebble batch: ids, records and the document counter
// change together or not at all. Unless Options.NoSync is set, a
// write returns only after its write-ahead-log record is synced, so an
// acknowledged document survives kill -9 and power loss. Concurrent writers
// share syncs (pebble's group commit).
//
// # Concurrency
//
// A Store is safe for concurrent use. Queries run in parallel with each
// other and with writes, and see every write acknowledged before they
// started. Writers (Add, CheckAndAdd, Remove) are serialised by one mutex
// that is held for the write's apply to the database and to the in-memory
// postings, but not for the disk sync. CheckAndAdd checks in two steps:
// without the mutex, in parallel with everything else, against the
// documents applied when it started; then under the mutex against those
// applied since (usually none, so this costs a few memory lookups). Two
// near-identical documents sent at once are never both added. A
// CheckAndAdd may report a duplicate of a document whose own write is still
// waiting for its sync. Close waits for running operations.
//
// One process at a time: Open takes the directory lock before it reads
// anything and holds it until Close; another opener gets ErrLocked.
//
// # A full disk
//
// Every write first checks the free space of the index's file system and
// is refused with ErrDiskFull, before anything is written, unless it
// leaves Options.MinFreeBytes (default 4 x MemTableSize) free: pebble
// cannot survive running out of space in its write-ahead log. Queries go
// on; writes are accepted again once space is freed (Health tells). A
// write that fails in the log anyway puts the store in a failed state
// (ErrFailed) until a new process reopens it. space.go explains why;
// docs/reliability.md lists the tests.
//
// # Memory
//
// Bounded by Options: Options.CacheSize (default 64 MiB) of block cache
// and up to two memtables of Options.MemTableSize (default 16 MiB), plus
// small per-query scratch. Growing with the documents: the in-memory
// tables, 8-byte slots held 55% to 80% full (65% after Open), one table per
// band or table plus one for the ids. With 16 bands that is 17 x 8 / load
// = 170 to 250 bytes per document, 209 right after Open (209 MB for a
// million documents; Stats.PostingsBytes reports it); the default 13 bands
// at 0.8 take 14/17 of that. A table that
// reaches 80% is rebuilt at about 55%, during which writes and queries wait
// (about 33 ms per table of a million postings, BenchmarkGrow); the tables
// of an index are rebuilt by different writes, one at a time. Large
// tables are mapped outside the Go heap, so the garbage collector neither
// scans them nor lets the heap grow in proportion to them.
//
// # Errors
//
// ErrParams (invalid parameters), ErrIncompatible (a sketch or parameters
// that do not match the index), ErrNotIndex, ErrLocked (another opener,
// such as a running server, holds the index), ErrExists, ErrVersion,
// ErrCorrupt (stored data that does not decode, or records that disagree
// with the document counter), ErrDuplicateID, ErrNotFound, ErrInvalidID
// (empty, over MaxIDBytes, or invalid UTF-8), ErrFull (sequence numbers
// exhausted), ErrDiskFull, ErrFailed and ErrClosed. Nothing panics on
// input or on corrupt data.
package store
