package dedup

import (
	"errors"
	"fmt"

	"github.com/neardup/neardup/bloom"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

var ErrNeedsDrop = errors.New("this method finds duplicates without naming the earlier document: the pipeline must call AddDrop (dedup.DropFinder)")

// defaultBloomN is the capacity when Options.BloomN is zero and the number
// of documents is not known.
const defaultBloomN = 10_000_000

// bloomMethod removes exact duplicates in one streaming pass with a Bloom
// filter (package bloom) sized from Options.BloomN and Options.BloomFPP:
// memory is fixed by (n, p) (28.8 bits per item at p = 1e-6), never by the
// corpus. The key is the normalised text, or Options.KeyField's value (a
// URL, say); a document with an empty key is never a duplicate. A document
// whose key is (probably) in the filter is a duplicate of an earlier one.
//
// Naming the earlier document: beside the filter, the Finder keeps a map
// from each key to the first document that had it while the map fits in
// an eighth of the memory budget (Options.Memory; about 64 bytes a key:
// namedKeys). A duplicate whose key is in the map is reported as a pair
// with that first document (similarity 1), so its cluster names the kept
// document and `neardup eval` can score it, like the exact method's. While
// the map holds every key added in this run and no keys came from an
// earlier run's BloomFile, a key the filter reports but the map lacks is a
// false positive of the filter: the document is kept, not removed. Once
// the map is full, and for keys that a loaded BloomFile holds, the filter
// cannot say which document had the key: the document is removed through
// DropFinder's drop (a cluster of its own, no pairs line; Stats.Dropped
// counts them), and a false positive (probability at most p while at most
// n keys were added) removes a document that has no copy.
//
// bloom-overlap never names the earlier document: its shingles come from
// many documents. Its duplicates are always dropped.
//
// bloom-overlap is the shingle-overlap mode of datatrove's Bloom filter
// step (SingleBloomFilter): a document is a duplicate when at least
// Options.Threshold of its distinct shingles (Options.Shingle) are already in
// the filter, and the shingles not yet there are added whether or not the
// document is dropped, as datatrove does (datatrove counts shingles with
// repeats and drops strictly above its threshold; here the shingles are a
// set and the threshold is inclusive, like every --threshold). BloomN then
// counts shingles, not documents.
type bloomMethod struct {
	overlap   bool
	n         uint64
	p         float64
	keyField  string
	seed      uint64
	spec      sketch.Spec // Exact (bloom) or Jaccard (bloom-overlap)
	shingle   shingle.Options
	threshold float64
	m         uint64
	k         int
	file      string        // Options.BloomFile
	filter    *bloom.Filter // the last Finder's, for Persist
	namedCap  int           // keys the first-document map may hold
	loaded    bool          // the filter came from file, with earlier runs' keys
}

// bloomNamedBytes is the memory of one entry of the key -> first document
// map (a 16-byte key, a 4-byte value, Go map overhead).
const bloomNamedBytes = 64

// newBloom returns the bloom method, or bloom-overlap: spec is the
// run's Spec with method Exact (bloom: only its normalisation matters) or
// Jaccard (bloom-overlap: its shingles and threshold).
func newBloom(cfg *Options, spec sketch.Spec, overlap bool) (Method, error) {
	m := &bloomMethod{overlap: overlap, n: uint64(cfg.BloomN), p: cfg.BloomFPP, keyField: cfg.KeyField,
		seed: cfg.BloomSeed, spec: spec, shingle: spec.Shingle, threshold: spec.Threshold, file: cfg.BloomFile}
	if cfg.BloomN < 0 {
		return nil, optErr("BloomN", "%d must not be negative", cfg.BloomN)
	}
	if m.n == 0 {
		m.n = defaultBloomN
	}
	if m.p == 0 {
		m.p = DefaultBloomFPP
	}
	budget := cfg.Memory
	if budget <= 0 {
		budget = DefaultMemory()
	}
	m.namedCap = int(min(budget/8/bloomNamedBytes, 1<<31-1))
	if !(m.p > 0 && m.p < 1) {
		return nil, optErr("BloomFPP", "%v must be in (0, 1)", m.p)
	}
	var err error
	if m.m, m.k, err = bloom.Optimal(m.n, m.p); err != nil {
		return nil, optErr("BloomN", "%d with BloomFPP %v: %v", m.n, m.p, err)
	}
	if overlap && cfg.KeyField != "" {
		return nil, conflict("KeyField", "Method", "%s: bloom-overlap compares shingles of the text, not a key", cfg.KeyField)
	}
	return m, nil
}

func (m *bloomMethod) Name() string {
	if m.overlap {
		return "bloom-overlap"
	}
	return "bloom"
}

func (m *bloomMethod) Facts() Facts {
	f := Facts{
		N:       m.n,
		FPP:     m.p,
		Bits:    m.m,
		Hashes:  m.k,
		Bytes:   m.m / 8,
		Filter:  "classic Bloom filter, XXH3-128 with enhanced double hashing",
		Formula: "m = -n ln p / (ln 2)^2, k = (m/n) ln 2",
		FPPAtN:  bloom.FPP(m.n, m.m, m.k),
	}
	if m.overlap {
		f.Duplicate = "of unnamed earlier documents (no pairs line, a cluster of its own)"
	} else {
		f.Duplicate = fmt.Sprintf("of the first document with the same key, named while the key map holds at most %s keys (then, and for keys of an earlier --bloom-filter, unnamed)", number(m.namedCap))
	}
	switch {
	case m.overlap:
		f.Mode, f.Threshold, f.Unit, f.Ngram = "shingle overlap", m.threshold, m.shingle.Unit.String(), m.shingle.N
	case m.keyField != "":
		f.Key = "field " + m.keyField
	default:
		f.Key = "normalised text"
	}
	return f
}

func (m *bloomMethod) NewSketcher() (DocSketcher, error) {
	if m.overlap {
		k, err := m.spec.NewSketcher()
		if err != nil {
			return nil, err
		}
		return &setSketcher{k: k, nilIfEmpty: true}, nil
	}
	return &bloomSketcher{m: m}, nil
}

func (m *bloomMethod) NewFinder() (Finder, error) {
	f, err := m.loadOrNew()
	if err != nil {
		return nil, err
	}
	m.filter = f
	bf := &bloomFinder{m: m, f: f}
	if !m.overlap {
		bf.first = make(map[bloom.Key]int32)
		bf.exact = !m.loaded
	}
	return bf, nil
}

// bloomKey is a document's key, hashed for the filter.
type bloomKey bloom.Key

// AppendJSON writes the key's 128-bit hash as 32 hex digits.
func (k bloomKey) AppendJSON(dst []byte) []byte {
	dst = append(dst, '"')
	dst = bloom.Key(k).AppendHex(dst)
	return append(dst, '"')
}

type bloomSketcher struct{ m *bloomMethod }

func (s *bloomSketcher) Sketch(d *Doc) (DocSketch, error) {
	key := d.Text
	if s.m.keyField != "" {
		if d.Key == "" {
			return nil, nil
		}
		key = []byte(d.Key)
	}
	return bloomKey(bloom.HashKey(key, s.m.seed)), nil
}

// bloomShingles is the sorted distinct shingle hashes of a document.
type bloomShingles []uint64

func (s bloomShingles) AppendJSON(dst []byte) []byte {
	return fmt.Appendf(dst, "%d", len(s)) // the number of distinct shingles
}

type bloomFinder struct {
	m      *bloomMethod
	f      *bloom.Filter
	absent []uint64 // scratch: shingles of a document not in the filter
	// first maps a key to the first document that had it, up to
	// m.namedCap keys; exact says that it holds every key in the filter.
	first map[bloom.Key]int32
	exact bool
}

// Add returns ErrNeedsDrop: see DropFinder.
func (f *bloomFinder) Add(int, DocSketch, func(Pair)) error {
	return fmt.Errorf("method %s: %w", f.m.Name(), ErrNeedsDrop)
}

// AddDrop tests and adds document i's key (or shingles) and drops the
// document when it is a duplicate.
func (f *bloomFinder) AddDrop(i int, s DocSketch, emit func(Pair), drop func(int, float64)) error {
	switch s := s.(type) {
	case nil:
		return nil
	case bloomKey:
		k := bloom.Key(s)
		if j, ok := f.first[k]; ok {
			emit(Pair{A: int(j), B: i, Similarity: 1, Distance: -1})
			return nil
		}
		present, err := f.f.AddKey(k)
		if err != nil {
			return err
		}
		if present && !f.exact {
			drop(i, 1)
			return nil
		}
		// A new key, or a false positive of the filter (the map holds
		// every key, and not this one): the document is kept.
		if f.first != nil {
			if len(f.first) < f.m.namedCap {
				f.first[k] = int32(i)
			} else {
				f.exact = false
			}
		}
		return nil
	case bloomShingles:
		// As datatrove: count the shingles already present (all tested
		// before any is added, so a document never matches itself), then
		// add the others, whether or not the document is dropped.
		f.absent = f.absent[:0]
		for _, h := range s {
			if !f.f.TestHash(h) {
				f.absent = append(f.absent, h)
			}
		}
		for _, h := range f.absent {
			f.f.AddHash(h)
		}
		if frac := float64(len(s)-len(f.absent)) / float64(len(s)); frac >= f.m.threshold {
			drop(i, frac)
		}
		return nil
	}
	return fmt.Errorf("bloom: sketch of type %T", s)
}

// cliques: every two documents with one key are a pair (Options.AllPairs);
// bloom-overlap names no pairs.
func (m *bloomMethod) cliques() bool { return !m.overlap }

func (f *bloomFinder) Flush(func(Pair)) error {
	f.first = nil
	return nil
}

// BytesPerDoc: the filter's share (m bits for the expected n documents);
// bloom-overlap also holds each document's shingle set while it is tested.
func (m *bloomMethod) BytesPerDoc(int, int64, int64) (heap, mapped int64) {
	heap = int64(m.m/8/max(m.n, 1)) + 16
	if !m.overlap {
		heap += bloomNamedBytes // the key map, up to its cap
	}
	return heap, 0
}
