package store

import (
	"fmt"
	"slices"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// Sketch is what the index keeps of a document: a MinHash signature (Sig,
// MinHash indexes) or a SimHash fingerprint (FP, SimHash indexes).
type Sketch struct {
	// Sig is the MinHash signature, the Spec's MinHash.NumPerm slots; nil
	// for SimHash.
	Sig minhash.Signature
	// FP is the SimHash fingerprint; bits above the Spec's SimHash.Bits
	// must be zero.
	FP simhash.Fingerprint
	// Set is the document's shingle set, the sorted and distinct 64-bit
	// shingle hashes (MinHash): what the index verifies a candidate with
	// exactly (sketch.Spec.DecideLeader). nil when the sketcher made none;
	// an index that keeps sets stores the document without one then, and
	// decides its pairs by the estimate alone.
	Set []uint64
	// Empty marks a document without shingles. Such a document is stored
	// (its id is known and can be removed) but it is never a candidate
	// and its queries find nothing: every empty document would otherwise
	// be a duplicate of every other.
	Empty bool
}

// Sketcher turns texts into sketches with an index's Spec, through
// package sketch (normalisation, shingling, then a MinHash signature or a
// SimHash fingerprint). It keeps scratch space and is not safe for
// concurrent use: use one per goroutine.
type Sketcher struct {
	spec sketch.Spec
	k    *sketch.Sketcher
	sk   sketch.Sketch
	zero minhash.Signature // the stored signature of a document without shingles
}

// NewSketcher returns a Sketcher for sp, a MinHash or SimHash
// specification (zero values resolved to defaults). Its MinHash sketches
// carry their shingle sets (Sketch.Set), which an index that keeps sets
// stores and an estimate-only index ignores.
func NewSketcher(sp sketch.Spec) (*Sketcher, error) { return newSketcher(sp, true) }

// newSketcher is NewSketcher, with the shingle sets only when sets is set
// (an index's own sketcher: only when the index keeps them).
func newSketcher(sp sketch.Spec, sets bool) (*Sketcher, error) {
	sp, err := resolveSpec(sp)
	if err != nil {
		return nil, err
	}
	k, err := sp.NewSketcherWith(sketch.SketcherOptions{Sets: sets && sp.Method == sketch.MinHash})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	s := &Sketcher{spec: sp, k: k}
	if sp.Method == sketch.MinHash {
		s.zero = make(minhash.Signature, sp.MinHash.NumPerm)
	}
	return s, nil
}

// Sketch returns the sketch of a text. The returned Sig is reused by the
// next call; copy it (or use it with the index) before calling again. The
// Set is the caller's (one allocation a document). It
// does not allocate once its buffers have grown. A document without
// shingles is Empty, with an all-zero signature (its record keeps one, which
// nothing compares).
func (s *Sketcher) Sketch(txt string) Sketch {
	s.k.Sketch(&s.sk, txt)
	sk := Sketch{Sig: s.sk.Sig, FP: s.sk.FP, Empty: s.sk.Empty}
	if !sk.Empty && s.sk.Set != nil {
		// A fresh copy: callers that keep sketches copy the signature
		// (as documented before sets were kept) and nothing else, and a
		// set shared with the next sketch would be silently wrong.
		sk.Set = slices.Clone(s.sk.Set)
	}
	if sk.Empty && s.spec.Method == sketch.MinHash {
		sk.Sig = s.zero
	}
	return sk
}

// Spec returns the Sketcher's specification, resolved.
func (s *Sketcher) Spec() sketch.Spec { return s.spec }
