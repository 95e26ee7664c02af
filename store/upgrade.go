package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/neardup/neardup/sketch"
	"github.com/redis/go-redis/v9"
)

// UpgradeResult counts what an Upgrade did with its documents.
type UpgradeResult struct {
	// Upgraded documents now keep their shingle sets.
	Upgraded int `json:"upgraded"`
	// Already had their sets (a rerun, or added after the first Upgrade).
	Already int `json:"already"`
	// Missing are ids not in the index.
	Missing int `json:"missing"`
	// Changed are documents whose text does not give the stored
	// signature (the input is not the text that was indexed): left as
	// they are, estimate only.
	Changed int `json:"changed"`
	// Empty documents have no shingles, hence no set.
	Empty int `json:"empty"`
}

// Add adds o's counts to u's (the result of Upgrade calls in turn).
func (u *UpgradeResult) Add(o UpgradeResult) {
	u.Upgraded += o.Upgraded
	u.Already += o.Already
	u.Missing += o.Missing
	u.Changed += o.Changed
	u.Empty += o.Empty
}

// Upgrade makes an estimate-only MinHash index keep shingle sets (format
// version 5 of the embedded store, 4 of Redis, where a record without its
// signature is valid: flagBare): documents added from then
// on keep theirs, and the documents of docs (their ids and their sketches
// with sets, from NewSketcher) get theirs when the stored signature is
// the one their text gives. Pairs with a document still without a set are
// decided by the estimate, as before. It is idempotent: run it again over
// the same input, or with docs empty only to turn sets on. The records are
// rewritten in one synced batch per call. An index that keeps sets
// already is only given the sets of docs that lack them.
func (s *Store) Upgrade(docs []Doc) (UpgradeResult, error) {
	var res UpgradeResult
	if s.ronly {
		return res, s.readOnlyErr()
	}
	if s.spec.Method != sketch.MinHash {
		return res, fmt.Errorf("%w: a %s index keeps no shingle sets", ErrParams, s.spec.Method)
	}
	sc, err := s.acquire()
	if err != nil {
		return res, err
	}
	defer s.release(sc)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	// The records below are written as a format-5 index writes them
	// (sets, bare where the set gives the signature), and the batch
	// that holds them says format 5. Until it commits, the writer lock
	// keeps every other write out, and a failed commit turns them off
	// again.
	wasSets, wasBare := s.sets.Load(), s.bare.Load()
	if !wasBare {
		b.Set(keyVersion, le32(formatBare), nil)
	}
	s.sets.Store(true)
	s.bare.Store(true)
	committed := false
	defer func() {
		if !committed {
			s.sets.Store(wasSets)
			s.bare.Store(wasBare)
		}
	}()
	var val []byte
	for i := range docs {
		d := &docs[i]
		if err := checkID(d.ID); err != nil {
			return res, fmt.Errorf("document %d: %w", i, err)
		}
		v, ok, err := getValue(s.db, idKey(sc.key[:0], d.ID))
		if err != nil {
			return res, err
		}
		if !ok {
			res.Missing++
			continue
		}
		if len(v) != 8 {
			return res, fmt.Errorf("%w: id %q maps to %d bytes", ErrCorrupt, d.ID, len(v))
		}
		seq := beUint64(v)
		if err := s.loadRecord(sc, seq); err != nil {
			return res, missingIsCorrupt(err, d.ID)
		}
		n, err := upgradeOne(&sc.rec, d, &res)
		if err != nil || !n {
			if err != nil {
				return res, fmt.Errorf("id %q: %w", d.ID, err)
			}
			continue
		}
		val = s.appendRecord(val[:0], d.ID, &d.Sketch)
		b.Set(recordKey(nil, seq), val, nil)
	}
	if b.Empty() {
		committed = true
		return res, nil
	}
	if err := s.commit(b); err != nil {
		return res, err
	}
	committed = true
	if s.wopts.Sync {
		if err := s.syncWait(b); err != nil {
			return res, err
		}
	}
	return res, nil
}

// upgradeOne decides what Upgrade does with document d, whose stored
// record is r: true when its record is to be rewritten with d's set.
func upgradeOne(r *record, d *Doc, res *UpgradeResult) (bool, error) {
	switch {
	case r.flags&flagEmpty != 0 || d.Sketch.Empty:
		if r.flags&flagEmpty != 0 && d.Sketch.Empty {
			res.Empty++
		} else {
			res.Changed++
		}
		return false, nil
	case r.hasSet:
		res.Already++
		return false, nil
	case !slices.Equal(r.sig, d.Sketch.Sig):
		res.Changed++
		return false, nil
	case len(d.Sketch.Set) == 0:
		return false, errors.New("store: Upgrade needs sketches with shingle sets (NewSketcher)")
	}
	res.Upgraded++
	return true, nil
}

// upgradeMetaScript turns sets and bare records on in a Redis index's
// meta hash: format 4, unless it is newer already.
var upgradeMetaScript = redis.NewScript(`
local f = tonumber(redis.call('HGET', KEYS[1], 'format') or '0')
if f < 4 then redis.call('HSET', KEYS[1], 'format', 4) end
return 1`)

// replaceRecordScript replaces a record (KEYS[1] its bucket, ARGV[1] its
// field) only when it is still ARGV[2]: a document removed or replaced
// meanwhile is left alone (0).
var replaceRecordScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1`)

// Upgrade is Store.Upgrade for a Redis index: its meta hash says format 4
// (sets, bare records) first, then each document's record is replaced by
// one with its set, unless it changed meanwhile (counted Missing). It
// takes three round trips for all of docs: the ids, the records, then
// the replacements, one script each in a pipeline. Processes that have
// the index open keep deciding as they did until they reopen it (restart
// the servers after an upgrade).
func (r *Redis) Upgrade(docs []Doc) (UpgradeResult, error) {
	var res UpgradeResult
	if r.ronly {
		return res, fmt.Errorf("store: %s is open read-only", r.loc)
	}
	if r.spec.Method != sketch.MinHash {
		return res, fmt.Errorf("%w: a %s index keeps no shingle sets", ErrParams, r.spec.Method)
	}
	sc, err := r.acquire()
	if err != nil {
		return res, err
	}
	defer r.release(sc)
	ctx := context.Background()
	if !r.bare.Load() {
		if err := upgradeMetaScript.Run(ctx, r.c, []string{r.metaKey()}).Err(); err != nil {
			return res, r.redisErr(err)
		}
		r.sets.Store(true)
		r.bare.Store(true)
	}
	// An id given twice is upgraded by a second call, after the first
	// has replaced its record, as one call a document would.
	seen := make(map[string]bool, len(docs))
	var todo []*Doc
	var again []Doc
	for i := range docs {
		d := &docs[i]
		if err := checkID(d.ID); err != nil {
			return res, fmt.Errorf("document %d: %w", i, err)
		}
		if seen[d.ID] {
			again = append(again, *d)
			continue
		}
		seen[d.ID] = true
		todo = append(todo, d)
	}
	// The ids' sequence numbers, then their records.
	pipe := r.c.Pipeline()
	idCmds := make([]*redis.StringCmd, len(todo))
	for k, d := range todo {
		idCmds[k] = pipe.HGet(ctx, r.idBucket(d.ID), d.ID)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return res, r.redisErr(err)
	}
	seqs := make([]uint64, len(todo))
	recCmds := make([]*redis.StringCmd, len(todo))
	pipe = r.c.Pipeline()
	for k, d := range todo {
		v, err := idCmds[k].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return res, r.redisErr(err)
		}
		if len(v) != 8 {
			return res, fmt.Errorf("%w: %s: id %q maps to %d bytes", ErrCorrupt, r.loc, d.ID, len(v))
		}
		seqs[k] = binary.BigEndian.Uint64([]byte(v))
		recCmds[k] = pipe.HGet(ctx, r.recordBucket(seqs[k]), v)
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return res, r.redisErr(err)
		}
	}
	// The replacements of the records that are to get their sets.
	prefix := ""
	if r.spread {
		prefix = string(rune(stCommitted))
	}
	p := r.newPipeline()
	var calls []*scriptCall
	for k, d := range todo {
		if recCmds[k] == nil {
			res.Missing++
			continue
		}
		rec, err := recCmds[k].Result()
		if errors.Is(err, redis.Nil) {
			res.Missing++ // removed between the two reads
			continue
		}
		if err != nil {
			return res, r.redisErr(err)
		}
		old := rec
		if r.spread {
			if rec, err = committedRecord(rec); err != nil {
				res.Missing++
				continue
			}
		}
		sc.recBuf = append(sc.recBuf[:0], rec...)
		if err := r.readRecord(&sc.rec, sc.recBuf); err != nil {
			return res, fmt.Errorf("%s: record of %q: %w", r.loc, d.ID, err)
		}
		if string(sc.rec.id) != d.ID {
			return res, fmt.Errorf("%w: %s: id %q maps to the record of %q", ErrCorrupt, r.loc, d.ID, sc.rec.id)
		}
		ok, err := upgradeOne(&sc.rec, d, &res)
		if err != nil {
			return res, fmt.Errorf("%s: id %q: %w", r.loc, d.ID, err)
		}
		if ok {
			calls = append(calls, p.script(replaceRecordScript, r.recordBucket(seqs[k]), be8(seqs[k]), old, prefix+string(r.appendRecord(nil, d.ID, &d.Sketch))))
		}
	}
	if err := p.exec(ctx); err != nil {
		return res, err
	}
	for _, c := range calls {
		if n, _ := c.cmd.Int(); n == 0 {
			res.Upgraded--
			res.Missing++
		}
	}
	if len(again) > 0 {
		more, err := r.Upgrade(again)
		res.Add(more)
		return res, err
	}
	return res, nil
}
