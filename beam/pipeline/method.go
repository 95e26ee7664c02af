package pipeline

import (
	"errors"
	"fmt"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/text"
)

// ErrMethod is wrapped by the error for a method or option the pipeline
// cannot run (its candidates are not bucket keys, or it needs a pass over
// the whole corpus first).
var ErrMethod = errors.New("not supported by the pipeline")

// method is what a worker needs of a dedup method: the normaliser, the
// sketcher, the bucket keys and the pair decision, all from package dedup
// (the pipeline never re-implements a key, a signature or a similarity:
// the sketches, keys and decisions are those of `neardup dedup`'s spill
// path, which gives the clusters of its in-memory finder).
type method struct {
	keyed dedup.Keyed
	norm  *text.Normalizer
	sk    dedup.DocSketcher
	buf   []byte
}

// checkConfig refuses a configuration the pipeline cannot run, naming the
// flag.
func checkConfig(cfg dedup.Options) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Cluster != cluster.Components {
		return fmt.Errorf("--cluster %s: %w (connected components only)", cfg.Cluster, ErrMethod)
	}
	if cfg.KeyField != "" {
		return fmt.Errorf("--key-field: %w", ErrMethod)
	}
	_, err := newMethod(cfg)
	return err
}

// newMethod builds the method of cfg for one worker.
func newMethod(cfg dedup.Options) (*method, error) {
	m, err := dedup.NewMethod(cfg)
	if err != nil {
		return nil, err
	}
	k, ok := m.(dedup.Keyed)
	if !ok {
		return nil, fmt.Errorf("--method %s: %w: its candidates are not bucket keys (minhash, simhash, exact and ksentence are)", cfg.Method, ErrMethod)
	}
	if pp, ok := m.(dedup.PrePass); ok && pp.NeedsPrePass() {
		return nil, fmt.Errorf("--method %s --weights %s: %w: it learns weights in a pass over the whole corpus (give --idf FILE)", cfg.Method, cfg.Spec.SimHash.Weights, ErrMethod)
	}
	// The normalisation of `neardup dedup`: the run's resolved sketch
	// specification's (ksentence's keeps line breaks).
	spec, err := cfg.ResolveSpec()
	if err != nil {
		return nil, err
	}
	norm, err := text.New(*spec.Normalize)
	if err != nil {
		return nil, err
	}
	sk, err := m.NewSketcher()
	if err != nil {
		return nil, err
	}
	return &method{keyed: k, norm: norm, sk: sk}, nil
}

// sketch normalises and sketches one document and returns its encoded
// sketch, or nil when the normalised text is empty or has no shingles (such
// a document is never a duplicate). The result is a new slice.
func (m *method) sketch(index int, id, txt string) ([]byte, error) {
	m.buf = m.norm.Append(m.buf[:0], txt)
	if len(m.buf) == 0 {
		return nil, nil
	}
	s, err := m.sk.Sketch(&dedup.Doc{Index: index, ID: id, Text: m.buf})
	if err != nil {
		return nil, fmt.Errorf("document %q: %w", id, err)
	}
	if s == nil {
		// No shingles (whitespace or punctuation the normalisation
		// kept): like an empty text, never a duplicate.
		return nil, nil
	}
	return m.keyed.AppendSketch(nil, s), nil
}

// decode decodes an encoded sketch.
func (m *method) decode(b []byte) (dedup.DocSketch, error) {
	return m.keyed.DecodeSketch(b)
}

// appendKeys appends the bucket keys of a decoded sketch.
func (m *method) appendKeys(dst []uint64, s dedup.DocSketch) []uint64 {
	return m.keyed.AppendKeys(dst, s)
}
