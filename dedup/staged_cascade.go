package dedup

import (
	"context"
	"encoding/binary"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// The staged cascade (Options.Cascade with the staged pipeline).
//
// A sign task cannot know a document's first occurrence in the whole
// input, only in its shard. It runs the one-process cascade over its
// shard (cascade.signed): a document whose content id an earlier document
// of the shard has is not sketched. Every document whose text has a
// sketch carries its content id: in its staged sketch (16 bytes before
// the method's, which only the shard's first occurrences have) and as
// its first key, so that every copy lands in the component of its first
// occurrence, whatever the shards. The join (JoinComponents) then does
// what Run's collector does, in input order within the group: a document
// whose content id an earlier document of the group has is joined with
// that first occurrence (one pair of similarity 1) and never reaches the
// Finder, which sees the first occurrences only, numbered among
// themselves. The global first occurrence of a text is the first of its
// shard, so it always has the method's sketch.
//
// The pairs file is the one-process cascade's: its copy pairs come first,
// in the order of the copies, then the method's pairs (Run's collector
// joins the copies as it meets them; the Finders staged report theirs at
// Flush). The orders say so (cascadeOrder).

// cascadeSigned is what a staged cascade's resolve hands on for a
// document with a non-empty text: its content id, the method's sketch
// (a first occurrence in the shard; nil for a copy or a text without
// one) and whether its text has a sketch (a copy: its shard's first
// occurrence has one).
type cascadeSigned struct {
	h     xxh3.Uint128
	s     DocSketch
	keyed bool
}

func (*cascadeSigned) AppendJSON(dst []byte) []byte { return dst } // never written: Sign refuses the cascade

// isUnkeyed reports whether s is a staged cascade's document without a
// sketch (counted as empty, as Run counts it).
func isUnkeyed(s DocSketch) bool {
	cs, ok := s.(*cascadeSigned)
	return ok && !cs.keyed
}

// cascadeStager stages the cascade around the method's stager: the
// staged sketch is the 16-byte content id (XXH3-128, low half first,
// little-endian), then the method's staged sketch where the sign task
// sketched the document; the keys are the content id's low half, then
// the method's.
type cascadeStager struct {
	inner   stager
	hamming bool
}

const contentIDBytes = 16

func (s cascadeStager) appendSigned(b []byte, keys []uint64, d DocSketch) ([]byte, []uint64) {
	cs, ok := d.(*cascadeSigned)
	if !ok || !cs.keyed {
		return b, keys
	}
	b = binary.LittleEndian.AppendUint64(b, cs.h.Lo)
	b = binary.LittleEndian.AppendUint64(b, cs.h.Hi)
	keys = append(keys, cs.h.Lo)
	if cs.s != nil {
		b, keys = s.inner.appendSigned(b, keys, cs.s)
	}
	return b, keys
}

func (s cascadeStager) decodeSigned(b []byte, reuse DocSketch) (DocSketch, error) {
	if len(b) < contentIDBytes {
		return nil, errStaged
	}
	cs := &cascadeSigned{keyed: true, h: xxh3.Uint128{Lo: binary.LittleEndian.Uint64(b), Hi: binary.LittleEndian.Uint64(b[8:])}}
	if len(b) > contentIDBytes {
		var in DocSketch
		if r, ok := reuse.(*cascadeSigned); ok {
			in = r.s
		}
		var err error
		if cs.s, err = s.inner.decodeSigned(b[contentIDBytes:], in); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

func (s cascadeStager) joinFinder(ctx context.Context, workers int, tmpDir string, sketched int64, docs []JoinDoc) (Finder, error) {
	return s.inner.joinFinder(ctx, workers, tmpDir, sketched, docs)
}

// countsBelow: never, as in Run (its Finder knows the first occurrences
// only, not the kept documents).
func (s cascadeStager) countsBelow() bool { return false }

func (s cascadeStager) facts(planned Facts, sketched int64) (Facts, error) {
	return s.inner.facts(planned, sketched)
}

// joinCascade is JoinComponents' cascade over a group's documents.
type joinCascade struct {
	st    cascadeStager
	first map[xxh3.Uint128]int32 // content id -> the group's first document with it
	orig  []int                  // the Finder's document k is docs[orig[k]]
	copy  []bool                 // docs[i] was joined as a copy
	n     int                    // copies joined
}

// add decides document i (its decoded sketch s, or nil): a copy of an
// earlier document of the group (of), or the method's sketch to give
// the Finder.
func (c *joinCascade) add(i int, s DocSketch) (in DocSketch, of int, isCopy bool) {
	cs, ok := s.(*cascadeSigned)
	if !ok {
		return s, 0, false // no sketch
	}
	if f, ok := c.first[cs.h]; ok {
		c.copy[i] = true
		c.n++
		return nil, int(f), true
	}
	c.first[cs.h] = int32(i)
	return cs.s, 0, false
}

func (c *joinCascade) hamming() bool { return c.st.hamming }

// emitter maps the Finder's pairs to the group's numbers.
func (c *joinCascade) emitter(emit func(Pair)) func(Pair) {
	return func(p Pair) {
		p.A, p.B = c.orig[p.A], c.orig[p.B]
		emit(p)
	}
}

// cascadeOrder rewrites the orders of lines (pairLines', byDoc as it
// said) so that the copy pairs come first, by copy, then the method's
// pairs in their order: a position in the first half of [0, 2^64) for a
// copy pair (the copy's place among docs documents), in the second for
// the others (by document as the copies, or the method's own position
// halved), then 0 and the copy's position, or 1 and the method's order.
func (c *joinCascade) cascadeOrder(lines []JoinPair, pairs []Pair, docs []JoinDoc, byDoc bool, total int64) {
	half := func(doc int64) uint64 { return cascadeHalf(doc, total) }
	for k, p := range pairs {
		o := lines[k].Order
		var n []byte
		if c.copy[p.B] {
			n = binary.BigEndian.AppendUint64(n, half(docs[p.B].Doc))
			n = append(n, 0)
			n = binary.BigEndian.AppendUint64(n, uint64(docs[p.B].Doc))
		} else {
			at := binary.BigEndian.Uint64(o)
			if byDoc {
				at = half(int64(at))
			} else {
				at >>= 1
			}
			n = binary.BigEndian.AppendUint64(n, 1<<63+at)
			n = append(n, 1)
			n = append(n, o...)
		}
		lines[k].Order = n
	}
}

// cascadeHalf is document doc's place among total documents in the first
// half of [0, 2^64), where cascadeOrder puts the copy pairs.
func cascadeHalf(doc, total int64) uint64 {
	if total <= 0 {
		total = 1 << 40
	}
	if uint64(doc) >= uint64(total) {
		return 1<<63 - 1
	}
	hi, lo := bits.Mul64(uint64(doc), 1<<63)
	q, _ := bits.Div64(hi, lo, uint64(total))
	return q
}

// AppendCascadeHitOrder appends the place, among the orders of
// cascadeOrder (JoinOptions.Documents total), of the pairs line of
// document doc found in an index (Input.AgainstIndexes), where Run
// writes it when its Finder reports the pairs at Flush: as it reads the
// document, so among the copy pairs, after doc's own.
func AppendCascadeHitOrder(dst []byte, doc, total int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, cascadeHalf(doc, total))
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(doc))
	return append(dst, 1)
}
