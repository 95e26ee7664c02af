package staged

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/zeebo/xxh3"
)

// The duplicate ids of --stats (dedup's duplicate_ids and
// duplicate_ids_first: how many ids more than one document has, and the
// first few of them in the order of their second document) are counted
// without any task holding every id. Each sign task writes its ids
// partitioned by the id's hash, each partition sorted by (hash, id,
// document): section 2P+1 of its pack sign/S/buckets (and of
// buckets.R for the runs it spilled). Bucket
// task P merges partition P of every shard: equal ids are adjacent, in
// input order, so the second document of each id that has two or more
// is the second of its run. It writes how many such ids its partition
// has and the first few by that second document (bucket/ids-P); finish
// adds the counts and merges the lists.

// idEntry is one document's id in a sign task's partition: the id's bytes
// are arena[at:at+n].
type idEntry struct {
	hash  uint64
	doc   uint32 // the document's number in its shard
	at, n uint32
}

// idEntrySize is what an idEntry takes in memory.
const idEntrySize = 24

func idHash(id []byte) uint64 { return xxh3.Hash(id) }

// compareIDs orders ids by hash, then bytes, then document.
func compareIDs(ha uint64, a []byte, da uint32, hb uint64, b []byte, db uint32) int {
	switch {
	case ha != hb:
		if ha < hb {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(a, b); c != 0 {
		return c
	}
	switch {
	case da < db:
		return -1
	case da > db:
		return 1
	}
	return 0
}

// appendIDRun sorts part and appends it in the file's form: the hash (8
// bytes) and the document (4 bytes), little-endian, then the id's length
// (uvarint) and bytes.
func appendIDRun(buf []byte, part []idEntry, arena []byte) []byte {
	id := func(e idEntry) []byte { return arena[e.at : e.at+e.n] }
	slices.SortFunc(part, func(a, b idEntry) int { return compareIDs(a.hash, id(a), a.doc, b.hash, id(b), b.doc) })
	for _, e := range part {
		buf = binary.LittleEndian.AppendUint64(buf, e.hash)
		buf = binary.LittleEndian.AppendUint32(buf, e.doc)
		buf = appendUvarint(buf, uint64(e.n))
		buf = append(buf, id(e)...)
	}
	return buf
}

// idRun reads one sorted run of a sign task's id partition.
type idRun struct {
	runFile
	hash uint64
	doc  uint32 // in the whole input
	id   []byte
	prev []byte
	b    [12]byte
}

func (r *idRun) next() error {
	r.prev = append(r.prev[:0], r.id...)
	ph, pd, had := r.hash, r.doc, r.ok
	_, err := io.ReadFull(r.rd, r.b[:])
	switch {
	case err == io.EOF:
		r.ok = false
		return nil
	case err != nil:
		return fmt.Errorf("%s: damaged work file: %w (an id cut short)", r.name, err)
	}
	n, err := binary.ReadUvarint(r.rd)
	if err == nil && n > 1<<31 {
		err = fmt.Errorf("an id of %d bytes", n)
	}
	if err == nil {
		r.id = slices.Grow(r.id[:0], int(n))[:n]
		_, err = io.ReadFull(r.rd, r.id)
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s: damaged work file: %w (an id cut short)", r.name, err)
	}
	r.hash, r.doc, r.ok = binary.LittleEndian.Uint64(r.b[:]), r.base+binary.LittleEndian.Uint32(r.b[8:]), true
	if had && compareIDs(ph, r.prev, pd, r.hash, r.id, r.doc) >= 0 {
		return fmt.Errorf("%s: damaged work file: ids out of order", r.name)
	}
	return nil
}

// idRunBefore orders runs by their current (hash, id, document).
func idRunBefore(x, y *idRun) bool {
	return compareIDs(x.hash, x.id, x.doc, y.hash, y.id, y.doc) < 0
}

// dupID is an id that more than one document has, and its second
// document in the whole input.
type dupID struct {
	doc uint64
	id  string
}

// dupIDs is a partition's duplicate ids: how many, and the first few by
// their second document.
type dupIDs struct {
	n     int64
	first []dupID // sorted by doc, at most maxListed
}

// maxListed is how many duplicate ids --stats lists
// (dedup.maxDuplicateIDsListed).
const maxListed = 10

// list keeps the id whose second document is doc if it is among the
// first maxListed.
func (d *dupIDs) list(doc uint64, id []byte) {
	if len(d.first) == maxListed && doc > d.first[maxListed-1].doc {
		return
	}
	k, _ := slices.BinarySearchFunc(d.first, doc, func(e dupID, doc uint64) int {
		switch {
		case e.doc < doc:
			return -1
		case e.doc > doc:
			return 1
		}
		return 0
	})
	d.first = slices.Insert(d.first, k, dupID{doc, string(id)})
	if len(d.first) > maxListed {
		d.first = d.first[:maxListed]
	}
}

// countDupIDs merges the runs of id partition q of every shard (runs[s]
// sign task s's runs, their indexes, off[s] its first document) and counts its
// duplicate ids. Each run is read through a buffer of bufSize bytes.
func (j *Job) countDupIDs(ctx context.Context, q int, runs [][]*packIndex, off []int64, bufSize int) (*dupIDs, error) {
	d := &dupIDs{}
	var id []byte // the id of the current run of equal ids
	var hash uint64
	seen := 0 // its documents so far
	err := mergeRuns(ctx, j, runs, 2*q+1, off, bufSize, func(f runFile) *idRun { return &idRun{runFile: f} }, idRunBefore, func(r *idRun) error {
		if seen > 0 && r.hash == hash && bytes.Equal(r.id, id) {
			if seen++; seen == 2 {
				d.n++
				d.list(uint64(r.doc), id)
			}
		} else {
			id, hash, seen = append(id[:0], r.id...), r.hash, 1
		}
		return nil
	})
	return d, err
}

// marshal is bucket/ids-P: the count, the listed ids' number, then each
// listed id's second document and the id (all uvarints, the id's length
// before its bytes). Binary, so that an id that is not UTF-8 comes back
// as it was.
func (d *dupIDs) marshal() []byte {
	b := appendUvarint(nil, uint64(d.n))
	b = appendUvarint(b, uint64(len(d.first)))
	for _, e := range d.first {
		b = appendUvarint(b, e.doc)
		b = appendUvarint(b, uint64(len(e.id)))
		b = append(b, e.id...)
	}
	return b
}

// readDupIDs reads bucket/ids-q.
func (j *Job) readDupIDs(ctx context.Context, q int) (*dupIDs, error) {
	name := bucketIDs(q)
	b, err := j.Work.ReadAll(ctx, name)
	if err != nil {
		return nil, err
	}
	bad := fmt.Errorf("%s: damaged work file", j.Work.URL(name))
	uvarint := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	n, ok1 := uvarint()
	k, ok2 := uvarint()
	if !ok1 || !ok2 || k > maxListed {
		return nil, bad
	}
	d := &dupIDs{n: int64(n)}
	for range k {
		doc, ok1 := uvarint()
		l, ok2 := uvarint()
		if !ok1 || !ok2 || l > uint64(len(b)) {
			return nil, bad
		}
		d.first = append(d.first, dupID{doc, string(b[:l])})
		b = b[l:]
	}
	if len(b) != 0 {
		return nil, bad
	}
	return d, nil
}

// duplicateIDs is Stats.DuplicateIDs and DuplicateIDsFirst from every
// bucket task's count.
func (j *Job) duplicateIDs(ctx context.Context) (int, []string, error) {
	all := &dupIDs{}
	for q := range j.Plan.Tasks {
		d, err := j.readDupIDs(ctx, q)
		if err != nil {
			return 0, nil, err
		}
		all.n += d.n
		for _, e := range d.first {
			all.list(e.doc, []byte(e.id))
		}
	}
	var first []string
	for _, e := range all.first {
		first = append(first, e.id)
	}
	return int(all.n), first, nil
}
