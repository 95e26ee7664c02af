package dedup

import (
	"sync"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/sketch"
)

// The cascade (Options.Cascade) finds exact copies first and hands only
// the rest to the near-duplicate method.
//
// A document is an exact copy when its normalised text, the Doc.Text the
// method's sketcher gets, is identical to an earlier document's: its
// 128-bit XXH3 content id (the exact method's) is in the claim table. The
// workers consult the table before they sketch: a document whose content
// id an earlier document (by Doc.Index) has claimed is not sketched; the
// others claim it (keeping the smallest index) and are sketched. The
// first occurrence is therefore always sketched; a later copy that got
// there first is sketched for nothing, which costs time, not
// correctness.
//
// The collector decides, in input order, whatever the workers'
// interleaving: a document is a copy when an earlier document with its
// content id was consumed (cascadeEntry.doc). A copy is joined with that
// first occurrence (one pairs line of similarity 1) and never reaches the
// Finder, which sees the first occurrences only, numbered 0, 1, 2, ...
// among themselves (cascade.orig maps them back). Identical texts have
// identical sketches, so every pair the method would have found for a
// copy it finds for its first occurrence: the clusters are those of the
// method alone. A first occurrence without a sketch (a text with no
// shingle) joins nothing, and neither do its copies, as with the method
// alone. Should a document's claimer never be consumed (a record dropped
// before a damaged stream's damage under Input.SkipInvalid), the
// collector sketches the document itself.
type cascade struct {
	shards [cascadeShards]cascadeShard
	// orig[k] is the document index of the Finder's document k.
	orig []int32
	// copies counts the documents joined as exact copies
	// (Stats.ExactCopies).
	copies int
	// late is the collector's sketcher, made when first needed.
	late DocSketcher
	// sketched counts the documents the workers sketched (for tests:
	// a copy sketched is work the cascade should have saved).
	sketched atomic.Int64
	// signed says that the run is a staged sign task's (sketchRanges):
	// resolve hands on every document's content id (cascadeSigned)
	// instead of deciding the copies for a Finder.
	signed bool
}

const cascadeShards = 64

type cascadeShard struct {
	mu sync.Mutex
	m  map[xxh3.Uint128]cascadeEntry
	_  [48]byte // one shard a 64-byte cache line (mutex 8, map 8)
}

// cascadeEntry is what the claim table holds of a content id: the
// smallest Doc.Index that claimed it (workers), and the document index of
// its first consumed occurrence, -1 before (collector), and whether that
// one has no sketch.
type cascadeEntry struct {
	claim  int32
	doc    int32
	noSkch bool
}

// cascadeEntryBytes is what the claim table and orig hold a distinct
// document, map overhead included (for the memory plan).
const cascadeEntryBytes = 56

func newCascade() *cascade {
	c := &cascade{}
	for i := range c.shards {
		c.shards[i].m = map[xxh3.Uint128]cascadeEntry{}
	}
	return c
}

func (c *cascade) shard(h xxh3.Uint128) *cascadeShard {
	return &c.shards[(h.Lo^h.Hi)%cascadeShards]
}

// claim records that document index has content id h and reports whether
// a document before it claimed h already (index is then a later copy).
func (c *cascade) claim(h xxh3.Uint128, index int) bool {
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[h]
	switch {
	case !ok:
		s.m[h] = cascadeEntry{claim: int32(index), doc: -1}
	case int(e.claim) < index:
		return true
	case index < int(e.claim):
		e.claim = int32(index)
		s.m[h] = e
	}
	return false
}

// cascadeSketch is what a cascade's worker returns for a non-empty
// document: its content id, and the method's sketch unless copy (the
// worker did not sketch it).
type cascadeSketch struct {
	h    xxh3.Uint128
	s    DocSketch
	copy bool
}

func (s *cascadeSketch) AppendJSON(dst []byte) []byte { return dst } // never written: Sign refuses the cascade

// cascadeCopy is the sketch the collector hands on for a copy of
// document of.
type cascadeCopy struct{ of int }

func (cascadeCopy) AppendJSON(dst []byte) []byte { return dst }

// cascadeSketcher is a worker's sketcher in a cascade.
type cascadeSketcher struct {
	c     *cascade
	inner DocSketcher
	// copy says that Sketch did not sketch the last document, a copy
	// (lastSketch).
	copy bool
}

func (s *cascadeSketcher) Sketch(d *Doc) (DocSketch, error) {
	h := xxh3.Hash128(d.Text)
	s.copy = s.c.claim(h, d.Index)
	if s.copy {
		return &cascadeSketch{h: h, copy: true}, nil
	}
	s.c.sketched.Add(1)
	in, err := s.inner.Sketch(d)
	if err != nil {
		return nil, err
	}
	return &cascadeSketch{h: h, s: in}, nil
}

// sketchSpec is the method's sketcher's (reusedSketcher; reusedOf makes
// sure it is one).
func (s *cascadeSketcher) sketchSpec() sketch.Spec { return s.inner.(reusedSketcher).sketchSpec() }

// lastSketch is the method's sketch of the last document, unless it was a
// copy the worker did not sketch.
func (s *cascadeSketcher) lastSketch() (sketch.Sketch, bool) {
	if s.copy {
		return sketch.Sketch{}, false
	}
	return s.inner.(reusedSketcher).lastSketch()
}

// resolve is the collector's decision for document i (rd) and what its
// worker returned: the method's sketch of a first occurrence (nil when it
// has none), cascadeCopy for a copy to join, or nil for a copy of a
// document without a sketch.
func (c *cascade) resolve(r *run, i int, rd *rawDoc, s DocSketch) (DocSketch, error) {
	cs, ok := s.(*cascadeSketch)
	if !ok {
		return s, nil // empty text: never claimed
	}
	sh := c.shard(cs.h)
	sh.mu.Lock()
	e := sh.m[cs.h]
	if e.doc >= 0 {
		sh.mu.Unlock()
		if c.signed {
			return &cascadeSigned{h: cs.h, keyed: !e.noSkch}, nil
		}
		if e.noSkch {
			return nil, nil
		}
		c.copies++
		return cascadeCopy{of: int(e.doc)}, nil
	}
	e.doc = int32(i)
	sh.m[cs.h] = e
	sh.mu.Unlock()
	in := cs.s
	if cs.copy {
		// Its claimer was never consumed: sketch it here.
		var err error
		if in, err = c.sketchLate(r, rd); err != nil {
			return nil, err
		}
	}
	if in == nil {
		sh.mu.Lock()
		e := sh.m[cs.h]
		e.noSkch = true
		sh.m[cs.h] = e
		sh.mu.Unlock()
	}
	if c.signed {
		return &cascadeSigned{h: cs.h, s: in, keyed: in != nil}, nil
	}
	return in, nil
}

// sketchLate sketches rd on the collector.
func (c *cascade) sketchLate(r *run, rd *rawDoc) (DocSketch, error) {
	if c.late == nil {
		sk, err := r.method.NewSketcher()
		if err != nil {
			return nil, err
		}
		c.late = sk
	}
	buf, _ := r.norm.AppendFound(nil, rd.text)
	return c.late.Sketch(&Doc{Index: rd.seq, ID: rd.id, Text: buf})
}

// emitter returns emit for the Finder, whose documents are numbered among
// the first occurrences: it reports their pairs by document index.
func (c *cascade) emitter(emit func(Pair)) func(Pair) {
	return func(p Pair) {
		p.A, p.B = int(c.orig[p.A]), int(c.orig[p.B])
		emit(p)
	}
}
