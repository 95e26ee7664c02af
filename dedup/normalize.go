package dedup

import "github.com/neardup/neardup/text"

// normalizeAdjuster is implemented by methods that need the normalisation
// changed to work at all: the pipeline applies AdjustNormalize to
// Config.Normalize before building the normaliser.
type normalizeAdjuster interface {
	AdjustNormalize(text.Options) text.Options
}

// normalizer builds the normaliser for a run of m.
func normalizer(cfg Config, m Method) (*text.Normalizer, error) {
	opts := cfg.Normalize
	if a, ok := m.(normalizeAdjuster); ok {
		opts = a.AdjustNormalize(opts)
	}
	return text.New(opts)
}

// AdjustNormalize keeps what KSentence splits sentences on: line breaks
// (whitespace still folds, to one '\n' where a break was) and sentence
// punctuation (punctuation folding is switched off; NFKC has already
// turned full-width ！？ into ASCII, and 。 stays as it is).
func (m *ksentenceMethod) AdjustNormalize(o text.Options) text.Options {
	if o.Whitespace {
		o.KeepNewlines = true
	}
	o.Punctuation = false
	return o
}
