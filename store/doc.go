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
// parameters (Params): the text normalisation, the shingles and
//
//   - MinHash (Broder 1997) with LSH banding: K = NumPerm slots (default
//     128) cut into Bands bands of Rows rows (default 16 x 8, seed 000);
//     every band's 64-bit key (lsh.Params.AppendKeys) is a posting. Two
//     documents are candidates when they share a band key, which for
//     Jaccard similarity s happens with probability 1 - (1 - s^r)^b
//     (0.947 at s = 0.8 and 0.9999 at s = 0.9 with 16 x 8); a candidate is a duplicate
//     when its estimated similarity (the fraction of equal slots, standard
//     error at most 0.044 at K = 128) is at least Threshold (default 0.8).
//   - SimHash (Charikar 2002) with Manku's permuted tables: Bits-bit
//     fingerprints (default 64) of shingles weighted by count, cut into
//     Blocks blocks; each choice of Blocks - Distance blocks is a table key.
//     Every fingerprint within Hamming distance Distance (default 3) shares
//     at least one table key with the query, so the search is exact; a
//     duplicate is a document within Distance.
//
// Sketcher turns a text into a Sketch with the stored parameters; an index
// refuses sketches of another method or size with ErrIncompatible, and
// Params.Check compares parameters a caller asks for with the stored ones.
// Documents without shingles are stored but never match (Sketch.Empty).
//
// # Operations
//
// Add, Query (duplicates best first), CheckAndAdd (query, then add when no
// duplicate was found, atomically), their batch forms AddBatch and
// CheckAndAddBatch, Remove, Get, Each, Stats and Compact. A query costs one
// seek per band or table plus one read per candidate.
//
// # On disk
//
// The key layout, value encodings and the version key are specified byte by
// byte in docs/format/store.md. The format version is FormatVersion; Open
// refuses a newer one (ErrVersion) without writing to it.
//
// # Durability
//
// Every write is one pebble batch: ids, records, postings and the document
// counter change together or not at all. Unless Options.NoSync is set, a
// write returns only after its write-ahead-log record is synced, so an
// acknowledged document survives kill -9 and power loss. Concurrent writers
// share syncs (pebble's group commit).
//
// # Concurrency
//
// A Store is safe for concurrent use. Queries run in parallel with each
// other and with writes, and see every write acknowledged before they
// started. Writers (Add, CheckAndAdd, Remove) are serialised by one mutex
// that is held for the check and the in-memory apply but not for the disk
// sync: two near-identical documents sent at once by CheckAndAdd are never
// both added. A CheckAndAdd may report a duplicate of a document whose own
// write is still waiting for its sync. Close waits for running operations.
//
// # Memory
//
// About Options.CacheSize (default 64 MiB) of block cache plus up to two
// memtables of Options.MemTableSize (default 16 MiB), plus small per-query
// scratch; it does not grow with the number of documents.
//
// # Errors
//
// ErrParams (invalid parameters), ErrIncompatible (a sketch or parameters
// that do not match the index), ErrNotIndex, ErrExists, ErrVersion,
// ErrCorrupt (stored data that does not decode), ErrDuplicateID,
// ErrNotFound, ErrInvalidID (empty, over MaxIDBytes, or invalid UTF-8) and
// ErrClosed. Nothing panics on input or on corrupt data.
package store
