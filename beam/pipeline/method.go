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

// method is what a worker needs of a dedup method: the normaliser and
// the staged sketch and keys, all from package dedup (the pipeline never
// re-implements a key, a signature or a similarity: the sketches and keys
// are those of `neardup dedup --executor`'s sign task, and each component
// of the candidate graph is joined by dedup.JoinComponents, the Finder of
// `neardup dedup`, as its join task does).
type method struct {
	norm   *text.Normalizer
	signer *dedup.Signer
	buf    []byte
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
	if _, ok := m.(dedup.Keyed); !ok {
		if cfg.Cascade {
			return nil, fmt.Errorf("--method cascade --then %s: %w: its candidates are not bucket keys (the cascade runs before minhash or simhash)", cfg.Method, ErrMethod)
		}
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
	sg, err := dedup.NewSigner(cfg)
	if err != nil {
		if cfg.Cascade {
			return nil, fmt.Errorf("--method cascade --then %s: %w: %w", cfg.Method, ErrMethod, err)
		}
		return nil, fmt.Errorf("--method %s: %w: %w", cfg.Method, ErrMethod, err)
	}
	return &method{norm: norm, signer: sg}, nil
}

// startFile begins an input file: the cascade's signer forgets the
// texts of the file before (dedup.Signer.Reset: an input file is the
// cascade's shard).
func (m *method) startFile() { m.signer.Reset() }

// sign normalises and sketches one document into sd (dedup.Signer: the
// staged sketch and its keys, both empty when the normalised text is
// empty or has no shingles: such a document is never a duplicate). With
// the cascade (dedup.Options.Cascade) the documents of a file come in
// input order after startFile, and a text seen earlier in the file is
// not sketched by the method: its sketch is its content id alone
// (sd.Copy).
func (m *method) sign(index int, id, txt string, sd *dedup.SignedDoc) error {
	m.buf = m.norm.Append(m.buf[:0], txt)
	if len(m.buf) == 0 {
		sd.Sketch, sd.Keys = sd.Sketch[:0], sd.Keys[:0]
		return nil
	}
	if err := m.signer.Sign(&dedup.Doc{Index: index, ID: id, Text: m.buf}, sd); err != nil {
		return fmt.Errorf("document %q: %w", id, err)
	}
	return nil
}
