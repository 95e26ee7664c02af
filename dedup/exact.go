package dedup

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/zeebo/xxh3"
)

func init() { register("exact", newExact) }

// exact finds documents whose normalised text is identical, by a 128-bit
// XXH3 hash of the text (the content id). Two different texts collide with
// probability about n²/2^129: for a billion documents, below 10^-20.
type exact struct{}

func newExact(Config) (Method, error) { return exact{}, nil }

func (exact) Name() string                   { return "exact" }
func (exact) Describe() map[string]any       { return map[string]any{"hash": "xxh3-128"} }
func (exact) NewSketcher() (Sketcher, error) { return exactSketcher{}, nil }
func (exact) NewFinder() (Finder, error) {
	return &exactFinder{first: make(map[contentID]int32)}, nil
}

// contentID is the 128-bit hash of a normalised text.
type contentID xxh3.Uint128

// AppendJSON writes the id as 32 hex digits.
func (c contentID) AppendJSON(dst []byte) []byte {
	b := xxh3.Uint128(c).Bytes()
	dst = append(dst, '"')
	dst = hex.AppendEncode(dst, b[:])
	return append(dst, '"')
}

type exactSketcher struct{}

func (exactSketcher) Sketch(d *Doc) (Sketch, error) {
	return contentID(xxh3.Hash128Seed(d.Text, 0)), nil
}

// exactFinder maps each content id to the first document that had it: a
// pair (first, i) per later copy, so clusters need no extra merging and
// the map holds one entry per distinct text.
type exactFinder struct {
	first map[contentID]int32
}

func (f *exactFinder) Add(i int, s Sketch, emit func(Pair)) error {
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

// cliques: every two copies of a text are a pair (Config.AllPairs).
func (exact) cliques() bool { return true }

// The exact method is Keyed: its one key is the low half of the content
// id, and Match compares the whole id.

func (exact) AppendKeys(dst []uint64, s Sketch) []uint64 {
	return append(dst, xxh3.Uint128(s.(contentID)).Lo)
}

func (exact) AppendSketch(dst []byte, s Sketch) []byte {
	b := xxh3.Uint128(s.(contentID)).Bytes()
	return append(dst, b[:]...)
}

func (exact) DecodeSketch(b []byte) (Sketch, error) {
	if len(b) != 16 {
		return nil, fmt.Errorf("exact: sketch of %d bytes, want 16", len(b))
	}
	return contentID{Hi: binary.BigEndian.Uint64(b[:8]), Lo: binary.BigEndian.Uint64(b[8:])}, nil
}

func (exact) Match(a, b Sketch) (float64, int, bool) {
	return 1, -1, a.(contentID) == b.(contentID)
}

// BytesPerDoc: one map entry per distinct text (id, index, map overhead).
func (exact) BytesPerDoc(int) int { return 48 }
