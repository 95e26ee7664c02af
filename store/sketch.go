package store

import (
	"fmt"
	"unsafe"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/text"
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

// Sketcher turns texts into sketches with an index's parameters:
// normalisation, shingling, then a MinHash signature or a SimHash
// fingerprint weighted by shingle counts. It keeps scratch space and is not
// safe for concurrent use: use one per goroutine.
type Sketcher struct {
	p      Params
	norm   *text.Normalizer
	sh     *shingle.Shingler
	mh     *minhash.Hasher
	sim    *simhash.Hasher
	buf    []byte
	hashes []uint64
	sig    minhash.Signature
}

// NewSketcher returns a Sketcher for p (zero values resolved to defaults).
func NewSketcher(p Params) (*Sketcher, error) {
	p, err := p.resolve()
	if err != nil {
		return nil, err
	}
	s := &Sketcher{p: p}
	if s.norm, err = text.New(p.Normalize); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	if s.sh, err = shingle.New(p.Shingle); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	switch p.Method {
	case MinHash:
		s.mh, err = minhash.New(minhash.Options{NumPerm: p.NumPerm, Family: p.Family, Seed: p.Seed})
		s.sig = make(minhash.Signature, 0, p.NumPerm)
	case SimHash:
		s.sim, err = simhash.New(simhash.Options{Bits: p.Bits, Seed: p.Seed})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParams, err)
	}
	return s, nil
}

// Sketch returns the sketch of a text. The returned Sig is reused by the
// next call; copy it (or use it with the index) before calling again. It
// does not allocate once its buffers have grown.
func (s *Sketcher) Sketch(txt string) Sketch {
	s.buf = s.norm.Append(s.buf[:0], txt)
	// A view of the buffer, not a copy: the shingler keeps neither the
	// text nor parts of it, and the buffer is not changed during the call.
	s.hashes = s.sh.AppendHashes(s.hashes[:0], unsafe.String(unsafe.SliceData(s.buf), len(s.buf)))
	sk := Sketch{Empty: len(s.hashes) == 0}
	if s.mh != nil {
		s.sig = s.mh.Sign(s.sig[:0], s.hashes)
		sk.Sig = s.sig
	} else {
		sk.FP = s.sim.Hash(s.hashes)
	}
	return sk
}

// Params returns the Sketcher's resolved parameters.
func (s *Sketcher) Params() Params { return s.p }
