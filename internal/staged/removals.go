package staged

import (
	"context"
	"fmt"

	"github.com/neardup/neardup/internal/heapx"
)

// removals merges section 2S of the packs join/*/shards (each the removed
// documents of shard S that one join task found, in document order) into one stream in
// document order, holding a read buffer a section and one removal each: a
// write task's memory does not grow with its shard.
type removals struct {
	h    *heapx.Heap[*removalRun] // by document
	prev uint64
	seen bool
	n    int64 // removals returned so far
	// hits are the shard's documents found in an index (nil without):
	// one that no join removed is in no component, and goes alone,
	// named after its indexed duplicate (alone counts them).
	hits  *hitRun
	alone int64
	err   error // of reading the hits, for pop
}

// removalRun is one join task's removals of the shard.
type removalRun struct {
	r       *reader
	doc     uint64
	cluster []byte
}

func (rr *removalRun) next() (bool, error) {
	if rr.r.atEOF() {
		return false, nil
	}
	doc, err := rr.r.uvarint()
	if err != nil {
		return false, err
	}
	if rr.cluster, err = rr.r.bytes(rr.cluster); err != nil {
		return false, err
	}
	rr.doc = doc
	return true, nil
}

// openRemovals opens the join tasks' removals of shard s.
func (j *Job) openRemovals(ctx context.Context, s int) (*removals, error) {
	rm := &removals{h: heapx.New(make([]*removalRun, 0, j.Plan.Tasks), func(a, b *removalRun) bool { return a.doc < b.doc })}
	for g := range j.Plan.Tasks {
		px, err := j.joinShard(ctx, g, s)
		if err != nil {
			rm.Close()
			return nil, err
		}
		rd, err := j.openSection(ctx, px, 2*s, 64<<10)
		if err != nil {
			rm.Close()
			return nil, err
		}
		rr := &removalRun{r: rd}
		ok, err := rr.next()
		if err != nil || !ok {
			rd.Close()
			if err != nil {
				rm.Close()
				return nil, err
			}
			continue
		}
		rm.h.Push(rr)
	}
	var err error
	if rm.hits, err = j.openHits(ctx, s); err != nil {
		rm.Close()
		return nil, err
	}
	return rm, nil
}

// skipJoined moves the hits past those that a join removes (a document
// found in an index that is in a component goes with its cluster).
func (rm *removals) skipJoined() error {
	for rm.hits != nil && rm.hits.ok && rm.h.Len() > 0 && rm.hits.doc <= rm.h.Top().doc {
		if rm.hits.doc < rm.h.Top().doc {
			return nil
		}
		if err := rm.hits.next(); err != nil {
			return err
		}
	}
	return nil
}

// hitNext reports whether the next removal is a hit's.
func (rm *removals) hitNext() bool {
	return rm.hits != nil && rm.hits.ok && (rm.h.Len() == 0 || rm.hits.doc < rm.h.Top().doc)
}

// peek returns the next removal's document, ok false at the end.
func (rm *removals) peek() (doc uint64, ok bool) {
	if rm.err == nil {
		rm.err = rm.skipJoined()
	}
	if rm.err != nil {
		return 0, true // pop returns the error
	}
	if rm.hitNext() {
		return rm.hits.doc, true
	}
	if rm.h.Len() == 0 {
		return 0, false
	}
	return rm.h.Top().doc, true
}

// pop returns the next removal's cluster id and moves past it.
func (rm *removals) pop() (string, error) {
	if rm.err == nil {
		rm.err = rm.skipJoined()
	}
	if rm.err != nil {
		return "", rm.err
	}
	if rm.hitNext() {
		h := rm.hits
		if rm.seen && h.doc <= rm.prev {
			return "", fmt.Errorf("%s: damaged work file: document %d found twice or out of order", h.r.name, h.doc)
		}
		rm.prev, rm.seen = h.doc, true
		rm.n++
		rm.alone++
		cluster := string(h.id)
		return cluster, h.next()
	}
	rr := rm.h.Top()
	if rm.seen && rr.doc <= rm.prev {
		return "", fmt.Errorf("%s: damaged work file: document %d removed twice or out of order", rr.r.name, rr.doc)
	}
	rm.prev, rm.seen = rr.doc, true
	rm.n++
	cluster := string(rr.cluster)
	ok, err := rr.next()
	if err != nil {
		return "", err
	}
	if ok {
		rm.h.FixTop()
	} else {
		rr.r.Close()
		rm.h.Pop()
	}
	return cluster, nil
}

func (rm *removals) Close() {
	for rm.h.Len() > 0 {
		rm.h.Pop().r.Close()
	}
	if rm.hits != nil {
		rm.hits.r.Close()
		rm.hits = nil
	}
}
