package dedup

import (
	"encoding/hex"
	"fmt"

	"github.com/neardup/neardup/sketch"
)

// exact finds documents whose normalised text is identical, by a 128-bit
// XXH3 hash of the text (the content id). Two different texts collide with
// probability about n²/2^129: for a billion documents, below 10^-20.
type exact struct{ spec sketch.Spec }

func newExact(spec sketch.Spec) (Method, error) { return exact{spec}, nil }

func (exact) Name() string { return "exact" }
func (exact) Facts() Facts { return Facts{Hash: "xxh3-128"} }
func (m exact) NewSketcher() (DocSketcher, error) {
	k, err := m.spec.NewSketcher()
	return hashSketcher{k}, err
}
func (exact) NewFinder() (Finder, error) {
	return &exactFinder{first: make(map[contentID]int32)}, nil
}

// contentID is the 128-bit hash of a normalised text (sketch.Sketch.Hash
// of the Exact method, big-endian).
type contentID [16]byte

// AppendJSON writes the id as 32 hex digits.
func (c contentID) AppendJSON(dst []byte) []byte {
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, c[:])
	return append(dst, '"')
}

// hashSketcher sketches with the Exact or KSentence method: a 16-byte hash.
type hashSketcher struct{ k *sketch.Sketcher }

func (s hashSketcher) Sketch(d *Doc) (DocSketch, error) {
	var sk sketch.Sketch
	s.k.SketchNormalized(&sk, d.Text)
	if s.k.Spec().Method == sketch.KSentence {
		return ksentenceSketch(sk.Hash), nil
	}
	return contentID(sk.Hash), nil
}

// exactFinder maps each content id to the first document that had it: a
// pair (first, i) per later copy, so clusters need no extra merging and
// the map holds one entry per distinct text.
type exactFinder struct {
	first map[contentID]int32
}

func (f *exactFinder) Add(i int, s DocSketch, emit func(Pair)) error {
	if s == nil {
		return nil
	}
	id := s.(contentID)
	if j, ok := f.first[id]; ok {
		emit(Pair{A: int(j), B: i, Similarity: 1, Distance: -1})
		return nil
	}
	f.first[id] = int32(i)
	return nil
}

func (f *exactFinder) Flush(func(Pair)) error { return nil }

// cliques: every two copies of a text are a pair (Options.AllPairs).
func (exact) cliques() bool { return true }

// The exact method is Keyed: its one key is the low half of the content
// id (sketch.Spec.AppendKeys), and Match compares the whole id.

func (m exact) AppendKeys(dst []uint64, s DocSketch) []uint64 {
	return m.spec.AppendKeys(dst, &sketch.Sketch{Hash: s.(contentID)})
}

func (m exact) AppendSketch(dst []byte, s DocSketch) []byte {
	return m.spec.AppendBinary(dst, &sketch.Sketch{Hash: s.(contentID)})
}

func (m exact) DecodeSketch(b []byte) (DocSketch, error) {
	h, err := decodeHash(m.spec, b)
	return contentID(h), err
}

// decodeHash decodes the binary form of an Exact or KSentence sketch.
func decodeHash(spec sketch.Spec, b []byte) ([16]byte, error) {
	sk, err := decodeSketch(spec, b, false, false)
	return sk.Hash, err
}

// decodeSketch decodes the binary form (sketch.Spec.AppendBinary) of a
// sketch of spec that is all of b: an empty sketch only when mayBeEmpty,
// a shingle set exactly when withSet.
func decodeSketch(spec sketch.Spec, b []byte, mayBeEmpty, withSet bool) (sketch.Sketch, error) {
	var sk sketch.Sketch
	rest, err := spec.DecodeBinary(&sk, b)
	switch {
	case err != nil:
		return sk, fmt.Errorf("%s: %w", spec.Method, err)
	case len(rest) != 0:
		return sk, fmt.Errorf("%s: %w: %d bytes after the sketch", spec.Method, sketch.ErrSketch, len(rest))
	case sk.Empty:
		if !mayBeEmpty {
			return sk, fmt.Errorf("%s: %w: an empty sketch", spec.Method, sketch.ErrSketch)
		}
	case (sk.Set != nil) != withSet:
		return sk, fmt.Errorf("%s: %w: shingle set present %v, want %v", spec.Method, sketch.ErrSketch, sk.Set != nil, withSet)
	}
	return sk, nil
}

func (exact) Match(a, b DocSketch) (float64, int, bool) {
	return 1, -1, a.(contentID) == b.(contentID)
}

// BytesPerDoc: one map entry per distinct text (id, index, map overhead).
func (exact) BytesPerDoc(int, int64, int64) (heap, mapped int64) { return 48, 0 }
