package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// textFlags are the normalisation switches shared by dedup, sign and
// compare.
type textFlags struct {
	opts text.Options
}

func (f *textFlags) register(fs *pflag.FlagSet) {
	f.opts = text.DefaultOptions()
	text.RegisterFlags(fs, &f.opts)
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

// sketchGroup is a set of the flag groups of sketchFlags.
type sketchGroup uint8

const (
	// groupThreshold is --threshold.
	groupThreshold sketchGroup = 1 << iota
	// groupShingle is --unit and --ngram.
	groupShingle
	// groupMinHash is --num-perm, --minhash-family, --bands and --rows.
	groupMinHash
	// groupSimHash is --bits, --distance and --weights.
	groupSimHash
	// groupKSentence is --k-sentences.
	groupKSentence
	// groupSeed is --seed.
	groupSeed
)

// sketchFlags declare, once, every flag that makes a sketch.Spec: the
// normalisation, the shingles, the MinHash, SimHash and KSentence
// parameters, the seed and the threshold. A command registers the groups
// it has (register); spec builds the Spec of a method from them (flags a
// command lacks keep their defaults, which are sketch's).
type sketchFlags struct {
	text       textFlags
	shingle    shingleFlags
	threshold  float64
	numPerm    int
	family     string
	bands      int
	rows       int
	seed       uint64
	bits       int
	distance   int
	weights    string
	kSentences int
}

// register declares the flags of groups (and always the normalisation
// flags) on fs, with sketch's defaults.
func (f *sketchFlags) register(fs *pflag.FlagSet, groups sketchGroup) {
	f.threshold, f.numPerm, f.family = sketch.DefaultThreshold, sketch.DefaultNumPerm, minhash.OPH.String()
	f.bits, f.distance, f.weights, f.kSentences = sketch.DefaultBits, sketch.DefaultDistance, sketch.WeightSet.String(), sketch.DefaultK
	f.shingle = shingleFlags{unit: "word", ngram: sketch.DefaultNgram}
	if groups&groupThreshold != 0 {
		fs.Float64Var(&f.threshold, "threshold", f.threshold, "Jaccard similarity at or above which two documents are duplicates")
	}
	if groups&groupShingle != 0 {
		f.shingle.register(fs, sketch.DefaultNgram)
	}
	if groups&groupMinHash != 0 {
		fs.IntVar(&f.numPerm, "num-perm", f.numPerm, "minhash: permutations (signature slots)")
		fs.StringVar(&f.family, "minhash-family", f.family, "minhash: hash family, oph (one permutation hashing), multiply-shift (independent slots) or permutation (the slow reference)")
		fs.IntVar(&f.bands, "bands", 0, "minhash: LSH bands (0: chosen from --threshold and --num-perm, or --num-perm / --rows)")
		fs.IntVar(&f.rows, "rows", 0, "minhash: rows per band (0: chosen from --threshold and --num-perm, or --num-perm / --bands)")
	}
	if groups&groupSeed != 0 {
		fs.Uint64Var(&f.seed, "seed", 0, "seed of the shingle, minhash and simhash hashes (0: the fixed defaults)")
	}
	if groups&groupSimHash != 0 {
		fs.IntVar(&f.bits, "bits", f.bits, fmt.Sprintf("simhash: fingerprint bits, 1 to %d", simhash.MaxBits))
		fs.IntVar(&f.distance, "distance", f.distance, "simhash: largest Hamming distance of duplicates (0: identical fingerprints only)")
		fs.StringVar(&f.weights, "weights", f.weights, "simhash: feature weights: set (each distinct shingle weighs 1), count (a shingle repeated c times weighs c), sublinear (1 + ln c) or tfidf (c x IDF, learned in a first pass)")
	}
	if groups&groupKSentence != 0 {
		fs.IntVar(&f.kSentences, "k-sentences", f.kSentences, "ksentence: how many of the longest sentences make the fingerprint")
	}
	f.text.register(fs)
}

// spec returns the sketch.Spec of method m from the flags, checked (it
// resolves): only the parameters that apply to m are set, and --bands and
// --rows left at 0 stay 0 (the Spec's banding rule chooses them), so that
// a run can tell given parameters from chosen ones. Bad values are usage
// errors naming the flag.
func (f *sketchFlags) spec(m sketch.Method) (sketch.Spec, error) {
	norm := f.text.opts
	s := sketch.Spec{Method: m, Normalize: &norm}
	switch m {
	case sketch.MinHash, sketch.SimHash, sketch.Jaccard:
		sh, err := f.shingle.options()
		if err != nil {
			return s, err
		}
		sh.Seed = f.seed
		s.Shingle = sh
	}
	switch m {
	case sketch.MinHash, sketch.Jaccard:
		if err := checkUnit01("--threshold", f.threshold); err != nil {
			return s, err
		}
		s.Threshold = f.threshold
	}
	switch m {
	case sketch.MinHash:
		if f.numPerm < 1 || f.numPerm > minhash.MaxNumPerm {
			return s, usageErr("--num-perm %d: must be between 1 and %d", f.numPerm, minhash.MaxNumPerm)
		}
		fam, err := minhash.ParseFamily(f.family)
		if err != nil {
			return s, usageErr("--minhash-family: %v", err)
		}
		if f.bands < 0 || f.rows < 0 {
			return s, usageErr("--bands and --rows must not be negative")
		}
		if f.bands*f.rows > f.numPerm || f.bands > f.numPerm || f.rows > f.numPerm {
			return s, usageErr("--bands %d x --rows %d exceeds --num-perm %d", f.bands, f.rows, f.numPerm)
		}
		s.MinHash = sketch.MinHashSpec{NumPerm: f.numPerm, Family: fam, Seed: f.seed, Bands: f.bands, Rows: f.rows}
	case sketch.SimHash:
		if f.bits < 1 || f.bits > simhash.MaxBits {
			return s, usageErr("--bits %d: must be between 1 and %d", f.bits, simhash.MaxBits)
		}
		if f.distance < 0 || f.distance >= f.bits {
			return s, usageErr("--distance %d: must be between 0 and --bits - 1 (%d)", f.distance, f.bits-1)
		}
		w, err := sketch.ParseWeighting(f.weights)
		if err != nil {
			return s, usageErr("--weights %q: must be set, count, sublinear or tfidf", f.weights)
		}
		d := f.distance
		if d == 0 {
			d = sketch.ExactDistance
		}
		s.SimHash = sketch.SimHashSpec{Bits: f.bits, Distance: d, Weights: w, Seed: f.seed}
	case sketch.KSentence:
		if f.kSentences < 1 {
			return s, usageErr("--k-sentences %d: must be at least 1", f.kSentences)
		}
		s.KSentence.K = f.kSentences
	}
	if _, err := s.Resolve(); err != nil {
		return s, usageErr("%v", strings.TrimPrefix(err.Error(), sketch.ErrSpec.Error()+": "))
	}
	return s, nil
}

// inputFlags say how records are read.
type inputFlags struct {
	textField   string
	idField     string
	maxDocBytes int
	skipInvalid bool
	format      string // of standard input: "", "jsonl" or "txt"
	// Registered by registerWalk, for the commands that walk input
	// directories and report damaged files.
	exclude        []string
	allowTruncated bool
}

func (f *inputFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.textField, "text-field", corpus.DefaultTextField, "JSON field that holds the text")
	fs.StringVar(&f.idField, "id-field", corpus.DefaultIDField, "JSON field that holds the document id (without one the id is FILE:LINE)")
	f.maxDocBytes = corpus.DefaultMaxDocBytes
	fs.Var((*sizeFlag)(&f.maxDocBytes), "max-doc-bytes", "largest record accepted: bytes, or a size such as 64MB or 1GiB")
	fs.StringVar(&f.format, "format", "", "format of standard input (-): jsonl (the default) or txt (one document per line); files go by their names")
	fs.BoolVar(&f.skipInvalid, "skip-invalid", false, "skip bad records (counted and reported) instead of stopping with exit code 3")
}

// registerWalk adds --exclude and --allow-truncated.
func (f *inputFlags) registerWalk(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.exclude, "exclude", nil, "leave out files and directories of input directories whose relative path or base name matches this glob (repeatable)")
	fs.BoolVar(&f.allowTruncated, "allow-truncated", false, "with --skip-invalid, exit 0 even when a damaged input file (truncated or corrupt stream) could be read only up to the damage (default: exit 5)")
}

func (f *inputFlags) options() (corpus.Options, error) {
	if f.maxDocBytes <= 0 {
		return corpus.Options{}, usageErr("--max-doc-bytes %d: must be positive", f.maxDocBytes)
	}
	if f.textField == "" {
		return corpus.Options{}, usageErr("--text-field must not be empty")
	}
	switch f.format {
	case "", corpus.StreamJSONL, corpus.StreamText:
	default:
		return corpus.Options{}, usageErr("--format %q: want jsonl or txt (it applies to standard input; files go by their names)", f.format)
	}
	return corpus.Options{TextField: f.textField, IDField: f.idField, MaxDocBytes: f.maxDocBytes, StreamFormat: f.format}, nil
}

// checkUnit01 validates a value in (0, 1].
func checkUnit01(name string, v float64) error {
	if !(v > 0 && v <= 1) {
		return usageErr("%s %v: must be in (0, 1]", name, v)
	}
	return nil
}

// expandInputs lists the input files, leaving out what matches exclude;
// a missing input, a broken link or a bad pattern is a usage error.
func expandInputs(args, exclude []string) (*corpus.Expansion, error) {
	if err := checkInputNames(args); err != nil {
		return nil, err
	}
	e, err := corpus.ExpandWith(args, corpus.ExpandOptions{Exclude: exclude})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if len(e.Files) == 0 {
		msg := fmt.Sprintf("no input files found in %v", args)
		switch {
		case len(e.Skipped) > 0:
			msg += fmt.Sprintf(" (%d paths skipped, e.g. %s: %s; %d excluded)", len(e.Skipped), e.Skipped[0].Path, e.Skipped[0].Reason, e.Excluded)
		case e.Excluded > 0:
			msg += fmt.Sprintf(" (%d excluded)", e.Excluded)
		}
		return nil, usageErr("%s", msg)
	}
	return e, nil
}

// printInputNotes prints what the input walk left out and the damaged
// files of a run, for the summaries of dedup and sign.
func printInputNotes(w io.Writer, s *dedup.Stats) {
	if s.FilesSkipped > 0 || s.FilesExcluded > 0 {
		fmt.Fprintf(w, "  input files not read: %d skipped, %d excluded by --exclude\n", s.FilesSkipped, s.FilesExcluded)
		for _, k := range s.FilesSkippedFirst {
			fmt.Fprintf(w, "    skipped %s: %s\n", k.Path, k.Reason)
		}
		if n := s.FilesSkipped - len(s.FilesSkippedFirst); n > 0 {
			fmt.Fprintf(w, "    ... and %d more (all in --stats)\n", n)
		}
	}
	if st := s.Stdin; st != nil {
		fmt.Fprintf(w, "  standard input: %s read", formatSize(st.Bytes))
		if st.SpoolBytes > 0 {
			fmt.Fprintf(w, ", a copy of %s kept in the temporary directory for the second pass", formatSize(st.SpoolBytes))
		}
		fmt.Fprintln(w)
		if s.Memory.EstimatedDocs == 0 {
			fmt.Fprintln(w, "    (its size was not known in advance: the memory estimate leaves it out; --spill for a stream larger than memory)")
		}
	}
	for _, d := range s.Damaged {
		lost := "the rest of the file was not read"
		if d.Resumed {
			lost = "one gzip member was lost; reading went on after it"
		}
		fmt.Fprintf(w, "  damaged input %s: %s\n    %s\n", d.File, lost, d.Error)
	}
}
