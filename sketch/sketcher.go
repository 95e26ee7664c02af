package sketch

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/ksentence"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/text"
)

// Sketch is what a document becomes: what dedup's methods compare and
// what an index (package store) keeps and verifies with. Only the fields
// of the Spec's method are set.
type Sketch struct {
	// Sig is the MinHash signature (MinHash.NumPerm slots); nil when
	// Empty.
	Sig minhash.Signature
	// FP is the SimHash fingerprint; bits above SimHash.Bits are zero;
	// zero when Empty.
	FP simhash.Fingerprint
	// Hash is, for Exact, the XXH3-128 hash of the normalised text (seed
	// 0, big-endian high word first); for KSentence the MD5 of the K
	// longest sentences.
	Hash [16]byte
	// Set is the sorted, distinct shingle hashes: always for Jaccard, and
	// for MinHash and SimHash when the Sketcher was asked for sets.
	Set []uint64
	// Empty marks a document without shingles (MinHash, SimHash, Jaccard):
	// it is never a duplicate of anything, of another empty document
	// included. It has no Sig, FP or Set: a Sketcher leaves them nil and
	// zero, and nothing reads those of an Empty sketch (Compatible accepts
	// it whatever they hold; an index stores it with a zero sketch).
	// Exact and KSentence sketches are never empty.
	Empty bool
}

// SketcherOptions are the optional inputs of a Sketcher.
type SketcherOptions struct {
	// Sets makes MinHash and SimHash sketches carry their shingle sets
	// (Sketch.Set), for verification by exact Jaccard.
	Sets bool
	// IDF is the table of SimHash WeightTFIDF; required then, ignored
	// otherwise. Its Meta must be IDFMeta() of the Spec.
	IDF *simhash.IDF
}

// Sketcher turns texts into sketches with a Spec. It keeps scratch space
// and is not safe for concurrent use: use one per goroutine. It does not
// allocate once its buffers have grown, except for what the returned
// sketch keeps (see Sketch).
type Sketcher struct {
	spec   Spec
	opts   SketcherOptions
	norm   *text.Normalizer
	sh     *shingle.Shingler
	mh     *minhash.Hasher
	sim    *simhash.Hasher
	ks     *ksentence.Hasher
	buf    []byte
	hashes []uint64
	sorter HashSorter
}

// NewSketcher returns a Sketcher for s with no options.
func (s Spec) NewSketcher() (*Sketcher, error) { return s.NewSketcherWith(SketcherOptions{}) }

// NewSketcherWith returns a Sketcher for s (resolved first).
func (s Spec) NewSketcherWith(o SketcherOptions) (*Sketcher, error) {
	r, err := s.Resolve()
	if err != nil {
		return nil, err
	}
	k := &Sketcher{spec: r, opts: o}
	if k.norm, err = text.New(*r.Normalize); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	if r.usesShingles() {
		if k.sh, err = shingle.New(r.Shingle); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrSpec, err)
		}
	}
	switch r.Method {
	case MinHash:
		m := r.MinHash
		k.mh, err = minhash.New(minhash.Options{NumPerm: m.NumPerm, Family: m.Family, Seed: m.Seed})
	case SimHash:
		k.sim, err = simhash.New(simhash.Options{Bits: r.SimHash.Bits, Seed: r.SimHash.Seed})
		if err == nil && r.SimHash.Weights == WeightTFIDF {
			switch {
			case o.IDF == nil:
				err = fmt.Errorf("SimHash weighting tfidf needs an IDF table")
			case o.IDF.Meta != r.IDFMeta():
				err = fmt.Errorf("IDF table built for %q, the specification shingles %q", o.IDF.Meta, r.IDFMeta())
			}
		}
	case KSentence:
		k.ks, err = ksentence.New(ksentence.Options{K: r.KSentence.K})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	return k, nil
}

// Spec returns the Sketcher's resolved Spec.
func (k *Sketcher) Spec() Spec { return k.spec }

// IDFMeta is the Meta line of an IDF table learned over the shingles of s
// (simhash.IDF), which SketcherOptions.IDF must carry.
func (s Spec) IDFMeta() string {
	return fmt.Sprintf("unit=%s ngram=%d seed=%d", s.Shingle.Unit, s.Shingle.N, s.Shingle.Seed)
}

// Normalize appends the normalised text to dst.
func (k *Sketcher) Normalize(dst []byte, txt string) []byte { return k.norm.Append(dst, txt) }

// Shingles appends the shingle hashes of a normalised text to dst, one per
// shingle position (with repeats). Methods without shingles append nothing.
func (k *Sketcher) Shingles(dst []uint64, normalized string) []uint64 {
	if k.sh == nil {
		return dst
	}
	return k.sh.AppendHashes(dst, normalized)
}

// Sketch sets *dst to the sketch of a text: normalise, then sketch.
// dst's Sig and Set are reused (overwritten) when they have capacity:
// copy a sketch that must outlive the next call.
func (k *Sketcher) Sketch(dst *Sketch, txt string) {
	k.buf = k.norm.Append(k.buf[:0], txt)
	k.SketchNormalized(dst, k.buf)
}

// SketchNormalized is Sketch for a text that is already normalised (with
// Normalize, or by the caller with the same options). The Sketcher keeps
// no reference to it.
func (k *Sketcher) SketchNormalized(dst *Sketch, norm []byte) {
	sig, set := dst.Sig[:0], dst.Set[:0]
	*dst = Sketch{}
	switch k.spec.Method {
	case Exact:
		dst.Hash = xxh3.Hash128Seed(norm, 0).Bytes()
		return
	case KSentence:
		dst.Hash = k.ks.Sum(norm)
		return
	}
	// A view of the bytes, not a copy: the shingler keeps neither the
	// text nor parts of it, and the bytes do not change during the call.
	view := unsafe.String(unsafe.SliceData(norm), len(norm))
	k.hashes = k.sh.AppendHashes(k.hashes[:0], view)
	dst.Sig, dst.Set = sig, set
	k.hashes = k.SketchShingles(dst, k.hashes)
}

// SketchShingles sets *dst to the sketch of a document given by its
// shingle hashes, as Shingles appends them (one per position, with
// repeats, in shingle order), for the methods that shingle (MinHash,
// SimHash, Jaccard; others leave *dst zero). It lets a caller keep the
// hashes it computed once: hashes may be reordered and shortened in place
// (SimHash set and sublinear weighting sort them, set weighting removes
// repeats); the result is hashes[:n] for the n it kept. dst's Sig and Set
// are reused as by Sketch.
func (k *Sketcher) SketchShingles(dst *Sketch, hashes []uint64) []uint64 {
	sig, set := dst.Sig[:0], dst.Set[:0]
	*dst = Sketch{}
	if k.sh == nil {
		return hashes
	}
	if len(hashes) == 0 {
		dst.Empty = true
		return hashes
	}
	sorted := false
	switch k.spec.Method {
	case MinHash:
		dst.Sig = k.mh.Sign(sig, hashes)
	case SimHash:
		k.sim.Reset()
		switch k.spec.SimHash.Weights {
		case WeightCount:
			k.sim.AddFeatures(hashes)
		case WeightTFIDF:
			// In shingle order: the weights are floating point, and their
			// sums depend on the order.
			k.sim.AddIDF(hashes, k.opts.IDF)
		case WeightSet:
			k.sorter.Sort(hashes)
			hashes = slices.Compact(hashes)
			sorted = true
			k.sim.AddFeatures(hashes)
		case WeightSublinear:
			k.sorter.Sort(hashes)
			sorted = true
			for i := 0; i < len(hashes); {
				j := i + 1
				for j < len(hashes) && hashes[j] == hashes[i] {
					j++
				}
				k.sim.Add(hashes[i], 1+math.Log(float64(j-i)))
				i = j
			}
		}
		dst.FP = k.sim.Sum()
	}
	if k.spec.Method == Jaccard || k.opts.Sets {
		if !sorted {
			k.sorter.Sort(hashes)
		}
		dst.Set = slices.Compact(append(set, hashes...))
	}
	return hashes
}
