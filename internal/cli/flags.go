package cli

import (
	"github.com/spf13/pflag"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

// textFlags are the normalisation switches shared by dedup, sign and
// compare.
type textFlags struct {
	opts text.Options
}

func (f *textFlags) register(fs *pflag.FlagSet) {
	d := text.DefaultOptions()
	f.opts = d
	fs.BoolVar(&f.opts.NFKC, "nfkc", d.NFKC, "apply Unicode NFKC (full-width forms become ASCII, ligatures split)")
	fs.BoolVar(&f.opts.CaseFold, "case-fold", d.CaseFold, "fold case")
	fs.BoolVar(&f.opts.Whitespace, "fold-whitespace", d.Whitespace, "collapse runs of whitespace to one space")
	fs.BoolVar(&f.opts.Punctuation, "fold-punct", d.Punctuation, "fold punctuation, including full-width CJK punctuation")
	fs.BoolVar(&f.opts.HTML, "html", d.HTML, "treat the text as HTML: drop scripts, styles and markup")
	fs.BoolVar(&f.opts.T2S, "t2s", d.T2S, "convert Traditional Chinese to Simplified (OpenCC dictionaries)")
	fs.BoolVar(&f.opts.StopWords, "stop-words", d.StopWords, "remove English and Chinese stop words")
}

// shingleFlags choose tokens and n-grams.
type shingleFlags struct {
	unit  string
	ngram int
}

func (f *shingleFlags) register(fs *pflag.FlagSet, defNgram int) {
	fs.StringVar(&f.unit, "unit", "word", "token unit: word (Unicode words, CJK characters one by one), char, or cjkword (Chinese word segmentation)")
	fs.IntVar(&f.ngram, "ngram", defNgram, "shingle size in tokens")
}

func (f *shingleFlags) options() (shingle.Options, error) {
	u, err := shingle.ParseUnit(f.unit)
	if err != nil {
		return shingle.Options{}, usageErr("--unit: %v", err)
	}
	if f.ngram < 1 || f.ngram > shingle.MaxN {
		return shingle.Options{}, usageErr("--ngram %d: must be between 1 and %d", f.ngram, shingle.MaxN)
	}
	return shingle.Options{Unit: u, N: f.ngram}, nil
}

// inputFlags say how records are read.
type inputFlags struct {
	textField   string
	idField     string
	maxDocBytes int
	skipInvalid bool
}

func (f *inputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.textField, "text-field", corpus.DefaultTextField, "JSON field that holds the text")
	fs.StringVar(&f.idField, "id-field", corpus.DefaultIDField, "JSON field that holds the document id (without one the id is FILE:LINE)")
	fs.IntVar(&f.maxDocBytes, "max-doc-bytes", corpus.DefaultMaxDocBytes, "largest record accepted, in bytes")
	fs.BoolVar(&f.skipInvalid, "skip-invalid", false, "skip bad records (counted and reported) instead of stopping with exit code 3")
}

func (f *inputFlags) options() (corpus.Options, error) {
	if f.maxDocBytes <= 0 {
		return corpus.Options{}, usageErr("--max-doc-bytes %d: must be positive", f.maxDocBytes)
	}
	if f.textField == "" {
		return corpus.Options{}, usageErr("--text-field must not be empty")
	}
	return corpus.Options{TextField: f.textField, IDField: f.idField, MaxDocBytes: f.maxDocBytes}, nil
}

// checkUnit01 validates a value in (0, 1].
func checkUnit01(name string, v float64) error {
	if !(v > 0 && v <= 1) {
		return usageErr("%s %v: must be in (0, 1]", name, v)
	}
	return nil
}

// expandInputs lists the input files; a missing input is a usage error.
func expandInputs(args []string) ([]string, error) {
	files, err := corpus.Expand(args)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if len(files) == 0 {
		return nil, usageErr("no input files found in %v", args)
	}
	return files, nil
}
