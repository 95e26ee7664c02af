package dedup

import (
	"fmt"
	"slices"
	"unsafe"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

// jaccardMethod finds every pair of documents whose shingle sets have exact
// Jaccard similarity at least Options.Threshold, by the prefix-filtering
// similarity join of package jaccard. It is a batch method: the sets of all
// documents are held in memory (8 bytes per distinct shingle per document,
// plus the join's index, see jaccard.Join) and the pairs are emitted at
// Flush. It is the reference the approximate methods are measured against.
//
// A document whose text yields no shingle (only punctuation, for example)
// has an empty set; such documents are never reported as duplicates of
// anything, each other included (jaccard.Set would call two empty sets
// identical; the exact method finds identical texts).
type jaccardMethod struct {
	spec      sketch.Spec
	threshold float64
	shingle   shingle.Options
}

func newJaccardMethod(spec sketch.Spec) (Method, error) {
	return &jaccardMethod{spec: spec, threshold: spec.Threshold, shingle: spec.Shingle}, nil
}

func (m *jaccardMethod) Name() string { return "jaccard" }

func (m *jaccardMethod) Facts() Facts {
	return Facts{Threshold: m.threshold, Unit: m.shingle.Unit.String(), Ngram: m.shingle.N, Join: "prefix filtering (PPJoin), exact"}
}

func (m *jaccardMethod) NewSketcher() (DocSketcher, error) {
	k, err := m.spec.NewSketcher()
	if err != nil {
		return nil, err
	}
	return &setSketcher{k: k}, nil
}

func (m *jaccardMethod) NewFinder() (Finder, error) {
	return &jaccardFinder{threshold: m.threshold}, nil
}

// shingleSet is the sorted, de-duplicated shingle hashes of a document.
type shingleSet []uint64

// AppendJSON writes the set as a JSON array of 16-digit hex strings (hex,
// not numbers, because JSON readers often hold numbers as float64, which
// cannot represent every 64-bit hash).
func (s shingleSet) AppendJSON(dst []byte) []byte {
	dst = append(dst, '[')
	for i, h := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		for shift := 60; shift >= 0; shift -= 4 {
			dst = append(dst, "0123456789abcdef"[h>>uint(shift)&0xf])
		}
		dst = append(dst, '"')
	}
	return append(dst, ']')
}

// setSketcher sketches a document as its shingle set, with a Jaccard Spec
// (the jaccard and bloom-overlap methods).
type setSketcher struct {
	k  *sketch.Sketcher
	sk sketch.Sketch // scratch: its Set is reused
	// nilIfEmpty returns a nil sketch for a document without shingles
	// (bloom-overlap) instead of an empty shingleSet.
	nilIfEmpty bool
}

func (s *setSketcher) Sketch(d *Doc) (DocSketch, error) {
	s.k.SketchNormalized(&s.sk, d.Text)
	if s.nilIfEmpty {
		if s.sk.Empty {
			return nil, nil
		}
		return bloomShingles(slices.Clone(s.sk.Set)), nil
	}
	return shingleSet(slices.Clone(s.sk.Set)), nil
}

// jaccardFinder collects the sets and joins them at Flush.
type jaccardFinder struct {
	threshold float64
	sets      [][]uint64 // non-empty sets
	index     []int32    // document index of sets[k]
}

func (f *jaccardFinder) Add(i int, s DocSketch, _ func(Pair)) error {
	if s == nil {
		return nil // empty normalised text
	}
	set, ok := s.(shingleSet)
	if !ok {
		return fmt.Errorf("jaccard: sketch of type %T", s)
	}
	if len(set) == 0 {
		return nil
	}
	if len(f.index) > 0 && int(f.index[len(f.index)-1]) >= i {
		return fmt.Errorf("jaccard: document %d added after %d", i, f.index[len(f.index)-1])
	}
	if i > int(^uint32(0)>>1) {
		return fmt.Errorf("jaccard: document %d: too many documents for one join", i)
	}
	f.sets = append(f.sets, set)
	f.index = append(f.index, int32(i))
	return nil
}

func (f *jaccardFinder) Flush(emit func(Pair)) error {
	err := jaccard.Join(f.sets, f.threshold, func(a, b int, sim float64) {
		emit(Pair{A: int(f.index[a]), B: int(f.index[b]), Similarity: sim, Distance: -1})
	})
	f.sets, f.index = nil, nil
	return err
}

// BytesPerDoc: the Finder keeps every document's shingle set (8 bytes a
// shingle), the prefix postings of the join index and the corpus-wide
// shingle ranking (a map entry per distinct shingle): about 28 bytes a
// shingle in all, measured on 1 KB web documents at word 5-grams.
func (m *jaccardMethod) BytesPerDoc(textBytes int, _, _ int64) (heap, mapped int64) {
	return int64(28*shinglesPerText(m.shingle.Unit, textBytes) + 64), 0
}

// textView returns d.Text as a string without copying it. The string is
// valid only while d is: for the shingler, which keeps neither the text
// nor parts of it (package shingle's promise).
func textView(d *Doc) string { return unsafe.String(unsafe.SliceData(d.Text), len(d.Text)) }
