package store

// TEMPORARY: the write of the Redis index before RedisWrite, the oracle of
// TestRedisWriteEqualsOld. Removed before the final commit.

import (
	"context"
	"fmt"
	"slices"
)

// write adds docs in order (check: unless a near-duplicate is in the
// index or among the documents of docs added before). Every document goes
// to the add script with the snapshot 0: one that shares no key with the
// index (the common case) is added in that one round trip; the others are
// held and come back with their candidates, verified here, and the
// documents without a duplicate are sent again with a higher snapshot.
func (r *Redis) writeOld(docs []Doc, check bool, limit int) ([]Result, error) {
	if r.ronly {
		return nil, fmt.Errorf("store: %s is open read-only", r.loc)
	}
	if r.spread {
		panic("old spread")
	}
	sc, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.release(sc)
	ctx := context.Background()
	results := make([]Result, len(docs))
	keys := make([][]uint64, len(docs))
	todo := r.validDocs(docs, results) // documents still to add, in order
	for _, i := range todo {
		if d := &docs[i]; !d.Sketch.Empty {
			keys[i] = r.appendKeys(nil, &d.Sketch)
		}
	}
	snaps := make([]uint64, len(docs))
	mode := "a"
	preds, predMatches := make([][]int, len(docs)), make([][]Match, len(docs))
	var idDeps [][]int // the earlier documents of the batch with the same id
	if check {
		mode = "c"
		var err error
		if preds, predMatches, err = r.batchPredsOld(sc, docs, keys, todo); err != nil {
			return nil, err
		}
		idDeps = sameIDsOld(docs, todo)
	}
	pending := make([]bool, len(docs))
	for _, i := range todo {
		pending[i] = true
	}
	// dupOf is the answer of a document one of whose earlier duplicates in
	// the batch was added: those matches.
	dupOf := func(i int) []Match {
		var ms []Match
		for k, p := range preds[i] {
			if results[p].Added {
				ms = append(ms, predMatches[i][k])
			}
		}
		return sortLimit(ms, 0, limit)
	}
	var args []any
	var field []byte
	pos := make([]int, len(docs)) // position (1-based) of a document in this run's script call
	for len(todo) > 0 {
		// A document whose earlier duplicates in the batch are all
		// answered, one of them added, is answered without Redis.
		kept := todo[:0]
		for _, i := range todo {
			added, waiting := false, false
			for _, j := range preds[i] {
				added = added || results[j].Added
				waiting = waiting || pending[j]
			}
			if added && !waiting {
				results[i].Matches = dupOf(i)
				pending[i] = false
				continue
			}
			kept = append(kept, i)
		}
		todo = kept
		if len(todo) == 0 {
			break
		}
		args = append(args[:0], mode, len(todo))
		var deps []int
		for p, i := range todo {
			pos[i] = p + 1
			d := &docs[i]
			// The pending documents i depends on: its near-duplicates
			// (their positions), then those with only its id (negated).
			dup := 0
			deps = deps[:0]
			for _, j := range preds[i] {
				if results[j].Added {
					dup = 1
				} else if pending[j] {
					deps = append(deps, pos[j])
				}
			}
			if idDeps != nil {
				for _, j := range idDeps[i] {
					if pending[j] && !slices.Contains(preds[i], j) {
						deps = append(deps, -pos[j])
					}
				}
			}
			args = append(args, snaps[i], d.ID, r.idBucket(d.ID), r.appendRecord(nil, d.ID, &d.Sketch), dup, len(deps))
			for _, p := range deps {
				args = append(args, p)
			}
			args = append(args, len(keys[i]))
			for t, k := range keys[i] {
				field = postingField(field[:0], t, k)
				args = append(args, r.postingBucket(t, k), string(field))
			}
		}
		reply, err := r.add.Run(ctx, r.c, []string{r.metaKey()}, args...).Slice()
		if err != nil {
			return nil, r.redisErr(err)
		}
		if len(reply) != 3 {
			return nil, fmt.Errorf("store: %s: add script replied %d elements", r.loc, len(reply))
		}
		answers, _ := reply[0].([]any)
		_, ok1 := reply[1].(int64)
		last, ok2 := reply[2].(int64)
		if len(answers) != len(todo) || !ok1 || !ok2 {
			return nil, fmt.Errorf("store: %s: add script replied for %d of %d documents", r.loc, len(answers), len(todo))
		}
		var held []int
		cands := make(map[int][]uint64)
		for j, v := range answers {
			i := todo[j]
			pos[i] = 0
			switch v := v.(type) {
			case int64:
				results[i].Added = true
				results[i].Matches = []Match{}
			case string:
				switch v {
				case "dupid":
					results[i].Err = fmt.Errorf("%w: %q", ErrDuplicateID, docs[i].ID)
				case "dup":
					results[i].Matches = dupOf(i)
				default:
					return nil, fmt.Errorf("store: %s: add script replied %q", r.loc, v)
				}
			case []any:
				if !check {
					return nil, fmt.Errorf("store: %s: add script held a document without a check", r.loc)
				}
				seqs := make([]uint64, 0, len(v))
				for _, s := range v {
					n, ok := s.(int64)
					if !ok {
						return nil, fmt.Errorf("store: %s: add script replied %T for a sequence number", r.loc, s)
					}
					seqs = append(seqs, uint64(n))
				}
				slices.Sort(seqs)
				cands[i] = slices.Compact(seqs)
				held = append(held, i)
				continue
			default:
				return nil, fmt.Errorf("store: %s: add script replied %T", r.loc, v)
			}
			pending[i] = false
		}
		if len(held) == 0 {
			break
		}
		// Verify the held documents against the documents committed since
		// their snapshots, then send those without a duplicate again (in
		// the batch's order).
		all := make([][]uint64, 0, len(held))
		for _, i := range held {
			all = append(all, cands[i])
		}
		recs, err := r.records(ctx, all...)
		if err != nil {
			return nil, err
		}
		todo = todo[:0]
		for _, i := range held {
			ms, err := r.verifyAll(nil, sc, &docs[i].Sketch, cands[i], recs, false, limit)
			if err != nil {
				return nil, err
			}
			if len(ms) > 0 {
				results[i].Matches = ms
				pending[i] = false
				continue
			}
			snaps[i] = uint64(last)
			todo = append(todo, i)
		}
	}
	return results, nil
}

// sameIDs returns, for each document of todo, the earlier documents of
// todo with the same id (nil when the batch repeats no id).
func sameIDsOld(docs []Doc, todo []int) [][]int {
	if len(todo) < 2 {
		return nil
	}
	seen := make(map[string][]int, len(todo))
	var deps [][]int
	for _, i := range todo {
		id := docs[i].ID
		if js := seen[id]; len(js) > 0 {
			if deps == nil {
				deps = make([][]int, len(docs))
			}
			deps[i] = slices.Clone(js)
		}
		seen[id] = append(seen[id], i)
	}
	return deps
}

// batchPreds finds, for each document of todo (in check mode), the
// earlier documents of todo that it duplicates (sharing a key and verified
// as the index verifies), with the match each would give.
func (r *Redis) batchPredsOld(sc *scratch, docs []Doc, keys [][]uint64, todo []int) ([][]int, [][]Match, error) {
	preds := make([][]int, len(docs))
	ms := make([][]Match, len(docs))
	seen := map[pendingKey][]int{}
	var cand []int
	for _, i := range todo {
		cand = cand[:0]
		for t, k := range keys[i] {
			pk := pendingKey{t, k}
			cand = append(cand, seen[pk]...)
			seen[pk] = append(seen[pk], i)
		}
		if len(cand) == 0 {
			continue
		}
		slices.Sort(cand)
		cand = slices.Compact(cand)
		sc.keys = r.appendKeys(sc.keys[:0], &docs[i].Sketch)
		for _, j := range cand {
			sc.rec = batchRecord(&docs[j], r.sets.Load())
			n := len(ms[i])
			var err error
			if ms[i], err = r.verify(ms[i], sc, &docs[i].Sketch, false); err != nil {
				return nil, nil, err
			}
			if len(ms[i]) > n {
				preds[i] = append(preds[i], j)
			}
		}
	}
	sc.rec = record{}
	return preds, ms, nil
}

