package store

import (
	"fmt"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// Sketch is what the index keeps of a document: a MinHash signature (Sig,
// MinHash indexes) or a SimHash fingerprint (FP, SimHash indexes).
type Sketch struct {
	// Sig is the MinHash signature, Params.NumPerm slots; nil for SimHash.
	Sig minhash.Signature
	// FP is the SimHash fingerprint; bits above Params.Bits must be zero.
	FP simhash.Fingerprint
	// Empty marks a document without shingles. Such a document is stored
	// (its id is known and can be removed) but it is never a candidate
	// and its queries find nothing: every empty document would otherwise
	// be a duplicate of every other.
	Empty bool
}

// Sketcher turns texts into sketches with an index's parameters, through
// package sketch (normalisation, shingling, then a MinHash signature or a
// SimHash fingerprint). It keeps scratch space and is not safe for
// concurrent use: use one per goroutine.
type Sketcher struct {
	p    Params
	k    *sketch.Sketcher
	sk   sketch.Sketch
	zero minhash.Signature // the stored signature of a document without shingles
}

// NewSketcher returns a Sketcher for p (zero values resolved to defaults).
func NewSketcher(p Params) (*Sketcher, error) {
	p, err := p.resolve()
	if err != nil {
		return nil, err
	}
	k, err := p.Spec().NewSketcher()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	s := &Sketcher{p: p, k: k}
	if p.Method == MinHash {
		s.zero = make(minhash.Signature, p.NumPerm)
	}
	return s, nil
}

// Sketch returns the sketch of a text. The returned Sig is reused by the
// next call; copy it (or use it with the index) before calling again. It
// does not allocate once its buffers have grown. A document without
// shingles is Empty, with an all-zero signature (its record keeps one, which
// nothing compares).
func (s *Sketcher) Sketch(txt string) Sketch {
	s.k.Sketch(&s.sk, txt)
	sk := Sketch{Sig: s.sk.Sig, FP: s.sk.FP, Empty: s.sk.Empty}
	if sk.Empty && s.p.Method == MinHash {
		sk.Sig = s.zero
	}
	return sk
}

// Params returns the Sketcher's resolved parameters.
func (s *Sketcher) Params() Params { return s.p }
