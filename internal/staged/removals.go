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
	return rm, nil
}

// peek returns the next removal's document, ok false at the end.
func (rm *removals) peek() (doc uint64, ok bool) {
	if rm.h.Len() == 0 {
		return 0, false
	}
	return rm.h.Top().doc, true
}

// pop returns the next removal's cluster id and moves past it.
func (rm *removals) pop() (string, error) {
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
}
