package dedup

import (
	"fmt"
	"slices"
	"strings"

	"github.com/neardup/neardup/sketch"
)

// Pair is a duplicate pair found by a method: documents A < B by input
// index, with their similarity (Jaccard, exact or estimated, in [0, 1];
// 1 for exact methods; see Hamming) and, for bit-fingerprint methods, the
// Hamming distance (-1 when it does not apply).
type Pair struct {
	A, B       int
	Similarity float64
	Distance   int
	// Hamming says that Similarity is 1 - Distance/bits, the fraction of
	// equal fingerprint bits (simhash without --verify), not a Jaccard
	// similarity. The pairs file then says "measure":"hamming".
	Hamming bool
}

// Doc is what a Sketcher sees of one document.
type Doc struct {
	// Index is the document's position in the input, from 0.
	Index int
	// ID is the document id.
	ID string
	// Text is the normalised text. It is reused after Sketch returns: a
	// sketch must not keep it.
	Text []byte
	// Key is the value of Options.KeyField, when one is set.
	Key string
}

// A Sketcher computes a method's per-document sketch (a hash, a
// signature, a fingerprint, a shingle set...). The pipeline creates one per
// worker goroutine, so a Sketcher may keep scratch space; it is never used
// by two goroutines at once.
type Sketcher interface {
	Sketch(d *Doc) (Sketch, error)
}

// Sketch is the opaque per-document value of a method. It is handed to the
// method's Finder, in input order, and may be written by `neardup sign`.
type Sketch interface {
	// AppendJSON appends the sketch as a JSON value (for `neardup sign`).
	AppendJSON(dst []byte) []byte
}

// A Finder receives every document's sketch in input order (Add with
// i = 0, 1, 2, ...) and reports duplicate pairs through emit, during Add
// (streaming methods) or at Flush (batch methods). Every emitted pair must
// have A < B. A Finder is used by one goroutine.
type Finder interface {
	Add(i int, s Sketch, emit func(Pair)) error
	Flush(emit func(Pair)) error
}

// Method is one way of finding duplicates, configured from a Options.
type Method interface {
	// Name is the --method name.
	Name() string
	// NewSketcher returns a Sketcher for one worker.
	NewSketcher() (Sketcher, error)
	// NewFinder returns the Finder for one run.
	NewFinder() (Finder, error)
	// Describe returns the effective parameters, for the summary and
	// stats (for example the chosen bands and rows).
	Describe() map[string]any
}

// methodNames are the names of the methods, sorted (Methods).
var methodNames = []string{"bloom", "bloom-overlap", "exact", "jaccard", "ksentence", "minhash", "simhash"}

// NewMethod returns the method cfg names, configured by cfg. A name that
// is not one of Methods() wraps ErrUnknownMethod; an invalid option is an
// *OptionError.
func NewMethod(cfg Options) (Method, error) {
	spec, threshold, err := cfg.spec()
	if err != nil {
		return nil, err
	}
	switch cfg.methodName() {
	case "bloom":
		return newBloom(&cfg, spec, false)
	case "bloom-overlap":
		return newBloom(&cfg, spec, true)
	}
	switch spec.Method {
	case sketch.MinHash:
		return newMinhashMethod(&cfg, spec)
	case sketch.SimHash:
		return newSimhashMethod(&cfg, spec, threshold)
	case sketch.Exact:
		return newExact(spec)
	case sketch.KSentence:
		return newKSentenceMethod(spec)
	case sketch.Jaccard:
		return newJaccardMethod(spec)
	}
	return nil, &OptionError{Field: "Method", Err: fmt.Errorf("%w %q", ErrUnknownMethod, cfg.methodName())}
}

// Methods returns the names of the methods, sorted.
func Methods() []string { return slices.Clone(methodNames) }

// methodList is Methods joined by commas.
func methodList() string { return strings.Join(methodNames, ", ") }
