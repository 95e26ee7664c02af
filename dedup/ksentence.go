package dedup

import (
	"fmt"

	"github.com/neardup/neardup/ksentence"
	"github.com/neardup/neardup/sketch"
)

// ksentenceMethod finds documents whose K longest sentences are identical
// (package ksentence, seed 002): the sketch is the MD5 of those sentences,
// and a document whose fingerprint equals an earlier one's is paired with
// the earliest such document (similarity 1), as the exact method does.
// Memory: one map entry per distinct fingerprint.
//
// The method splits sentences on the text it is given, so that text must
// keep newlines and sentence punctuation (。！？!?. …): with the default
// normalisation, which folds both, every document is one sentence and the
// method degenerates into an exact hash of the whole text.
// The normalisation is adjusted for it by sketch.Spec.Resolve.
type ksentenceMethod struct {
	spec sketch.Spec
	k    int
}

func newKSentenceMethod(spec sketch.Spec) (Method, error) {
	return &ksentenceMethod{spec: spec, k: spec.KSentence.K}, nil
}

func (m *ksentenceMethod) Name() string { return "ksentence" }

func (m *ksentenceMethod) Facts() Facts {
	return Facts{
		KSentences: m.k,
		Hash:       "md5 of the K longest sentences, longest first, joined by newlines",
		Sentences:  "split on newlines, 。｡．！？!?… and '.' before space or end",
	}
}

func (m *ksentenceMethod) NewSketcher() (DocSketcher, error) {
	k, err := m.spec.NewSketcher()
	return hashSketcher{k}, err
}

func (m *ksentenceMethod) NewFinder() (Finder, error) {
	return &ksentenceFinder{first: make(map[ksentence.Fingerprint]int32)}, nil
}

// ksentenceSketch is a document's fingerprint.
type ksentenceSketch ksentence.Fingerprint

// AppendJSON writes the fingerprint as 32 hex digits.
func (s ksentenceSketch) AppendJSON(dst []byte) []byte {
	dst = append(dst, '"')
	dst = ksentence.Fingerprint(s).AppendHex(dst)
	return append(dst, '"')
}

type ksentenceFinder struct {
	first map[ksentence.Fingerprint]int32
}

func (f *ksentenceFinder) Add(i int, s DocSketch, emit func(Pair)) error {
	if s == nil {
		return nil
	}
	fp, ok := s.(ksentenceSketch)
	if !ok {
		return fmt.Errorf("ksentence: sketch of type %T", s)
	}
	if j, ok := f.first[ksentence.Fingerprint(fp)]; ok {
		emit(Pair{A: int(j), B: i, Similarity: 1, Distance: -1})
		return nil
	}
	f.first[ksentence.Fingerprint(fp)] = int32(i)
	return nil
}

func (f *ksentenceFinder) Flush(func(Pair)) error { return nil }

// cliques: every two documents with one fingerprint are a pair
// (Options.AllPairs).
func (m *ksentenceMethod) cliques() bool { return true }

// The ksentence method is Keyed, like exact: its one key is the first
// eight bytes of the fingerprint, and Match compares all sixteen.

func (m *ksentenceMethod) AppendKeys(dst []uint64, s DocSketch) []uint64 {
	return m.spec.AppendKeys(dst, &sketch.Sketch{Hash: s.(ksentenceSketch)})
}

func (m *ksentenceMethod) AppendSketch(dst []byte, s DocSketch) []byte {
	return m.spec.AppendBinary(dst, &sketch.Sketch{Hash: s.(ksentenceSketch)})
}

func (m *ksentenceMethod) DecodeSketch(b []byte) (DocSketch, error) {
	h, err := decodeHash(m.spec, b)
	return ksentenceSketch(h), err
}

func (m *ksentenceMethod) Match(a, b DocSketch) (float64, int, bool) {
	return 1, -1, a.(ksentenceSketch) == b.(ksentenceSketch)
}

// BytesPerDoc: one map entry per distinct fingerprint (16-byte key, index,
// map overhead).
func (m *ksentenceMethod) BytesPerDoc(int, int64, int64) (heap, mapped int64) { return 48, 0 }
