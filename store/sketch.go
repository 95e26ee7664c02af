package store

import (
	"fmt"
	"slices"

	"github.com/neardup/neardup/sketch"
)

// Sketcher turns texts into sketches with an index's Spec, through
// package sketch (normalisation, shingling, then a MinHash signature or a
// SimHash fingerprint). It keeps scratch space and is not safe for
// concurrent use: use one per goroutine.
type Sketcher struct {
	spec sketch.Spec
	k    *sketch.Sketcher
	sk   sketch.Sketch
	sets bool // its sketches carry their shingle sets
}

// NewSketcher returns a Sketcher for sp, a MinHash or SimHash
// specification (zero values resolved to defaults). Its MinHash sketches
// carry their shingle sets (sketch.Sketch.Set), which an index that keeps sets
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
	return &Sketcher{spec: sp, k: k, sets: sets && sp.Method == sketch.MinHash}, nil
}

// Sketch returns the sketch of a text: its Sig or FP, with its shingle
// Set when the Sketcher makes them, and Empty for a document without
// shingles (no Sig then, as package sketch says). The returned Sig is
// reused by the next call; copy it (or use it with the index) before
// calling again. The Set is the caller's (one allocation a document). It
// does not allocate once its buffers have grown.
func (s *Sketcher) Sketch(txt string) sketch.Sketch {
	s.k.Sketch(&s.sk, txt)
	sk := s.sk
	if sk.Set != nil {
		// A fresh copy: callers that keep sketches copy the signature
		// (as documented before sets were kept) and nothing else, and a
		// set shared with the next sketch would be silently wrong.
		sk.Set = slices.Clone(sk.Set)
	}
	return sk
}

// SketchNormalized is Sketch for a text already normalised with the
// Sketcher's own normalisation options (Spec().Normalize): the sketch
// Sketch returns for the text before normalisation. The Sketcher keeps no
// reference to norm; the returned Sig and Set are as Sketch's.
func (s *Sketcher) SketchNormalized(norm []byte) sketch.Sketch {
	s.k.SketchNormalized(&s.sk, norm)
	sk := s.sk
	if sk.Set != nil {
		sk.Set = slices.Clone(sk.Set) // as in Sketch
	}
	return sk
}

// Sets reports whether the Sketcher's sketches carry their shingle sets
// (sketch.Sketch.Set): MinHash sketches of a Sketcher of NewSketcher, or
// of an index that keeps the sets.
func (s *Sketcher) Sets() bool { return s.sets }

// Spec returns the Sketcher's specification, resolved.
func (s *Sketcher) Spec() sketch.Spec { return s.spec }
