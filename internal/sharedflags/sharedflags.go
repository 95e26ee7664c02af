// Package sharedflags declares, once, the command-line flags that
// neardup's commands and neardup-beam share: the sketch parameters (the
// flags that make a sketch.Spec), the join flags (--verify,
// --estimate-only, --keep) and the record fields (--text-field,
// --id-field, --max-doc-bytes). Each flag has one name, one default and one
// help text, whichever command line it is on; the checks that turn the
// flags into a Spec are written here too, so both commands refuse the same
// values with the same words.
//
// The flags go on anything with the Var methods of the standard library's
// flag.FlagSet and of github.com/spf13/pflag's FlagSet (FlagSet).
package sharedflags

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// FlagSet is what the Register functions need of a command line's flag
// set: the methods of flag.FlagSet and pflag.FlagSet alike.
type FlagSet interface {
	BoolVar(p *bool, name string, value bool, usage string)
	IntVar(p *int, name string, value int, usage string)
	StringVar(p *string, name string, value string, usage string)
	Float64Var(p *float64, name string, value float64, usage string)
	Uint64Var(p *uint64, name string, value uint64, usage string)
}

// Group is a set of the groups of sketch flags.
type Group uint8

const (
	// Threshold is --threshold.
	Threshold Group = 1 << iota
	// Shingles is --unit and --ngram.
	Shingles
	// MinHash is --num-perm, --minhash-family, --bands and --rows.
	MinHash
	// SimHash is --bits, --distance and --weights.
	SimHash
	// KSentence is --k-sentences.
	KSentence
	// Seed is --seed.
	Seed

	// All is every group.
	All = Threshold | Shingles | MinHash | SimHash | KSentence | Seed
)

// Sketch holds the flags that make a sketch.Spec: the normalisation, the
// shingles, the MinHash, SimHash and KSentence parameters, the seed and
// the threshold. A command registers the groups it has; Spec builds the
// Spec of a method from them (flags a command lacks keep their defaults,
// which are package sketch's).
type Sketch struct {
	Text       text.Options
	Unit       string
	Ngram      int
	Threshold  float64
	NumPerm    int
	Family     string
	Bands      int
	Rows       int
	Seed       uint64
	Bits       int
	Distance   int
	Weights    string
	KSentences int
}

// Register sets every field to its default and declares the flags of
// groups (and always the normalisation flags) on fs.
func (f *Sketch) Register(fs FlagSet, groups Group) {
	*f = Sketch{
		Text: text.DefaultOptions(), Unit: shingle.Word.String(), Ngram: sketch.DefaultNgram,
		Threshold: sketch.DefaultThreshold, NumPerm: sketch.DefaultNumPerm, Family: minhash.OPH.String(),
		Bits: sketch.DefaultBits, Distance: sketch.DefaultDistance, Weights: sketch.WeightSet.String(), KSentences: sketch.DefaultK,
	}
	if groups&Threshold != 0 {
		fs.Float64Var(&f.Threshold, "threshold", f.Threshold, "Jaccard similarity at or above which two documents are duplicates")
	}
	if groups&Shingles != 0 {
		fs.StringVar(&f.Unit, "unit", f.Unit, "token unit: word (Unicode words, CJK characters one by one), char, or cjkword (Chinese word segmentation)")
		fs.IntVar(&f.Ngram, "ngram", f.Ngram, "shingle size in tokens")
	}
	if groups&MinHash != 0 {
		fs.IntVar(&f.NumPerm, "num-perm", f.NumPerm, "minhash: permutations (signature slots)")
		fs.StringVar(&f.Family, "minhash-family", f.Family, "minhash: hash family, oph (one permutation hashing), multiply-shift (independent slots) or permutation (the slow reference)")
		fs.IntVar(&f.Bands, "bands", 0, "minhash: LSH bands (0: chosen from --threshold and --num-perm, or --num-perm / --rows)")
		fs.IntVar(&f.Rows, "rows", 0, "minhash: rows per band (0: chosen from --threshold and --num-perm, or --num-perm / --bands)")
	}
	if groups&Seed != 0 {
		fs.Uint64Var(&f.Seed, "seed", 0, "seed of the shingle, minhash, simhash and Bloom filter hashes: minhash, simhash, jaccard, bloom, bloom-overlap (0: the fixed defaults)")
	}
	if groups&SimHash != 0 {
		fs.IntVar(&f.Bits, "bits", f.Bits, fmt.Sprintf("simhash: fingerprint bits, 1 to %d", simhash.MaxBits))
		fs.IntVar(&f.Distance, "distance", f.Distance, "simhash: largest Hamming distance of duplicates (0: identical fingerprints only)")
		fs.StringVar(&f.Weights, "weights", f.Weights, "simhash: feature weights: set (each distinct shingle weighs 1), count (a shingle repeated c times weighs c), sublinear (1 + ln c) or tfidf (c x IDF, from --idf or, where the command can, learned in a first pass)")
	}
	if groups&KSentence != 0 {
		fs.IntVar(&f.KSentences, "k-sentences", f.KSentences, "ksentence: how many of the longest sentences make the fingerprint")
	}
	text.RegisterFlags(fs, &f.Text)
}

// Shingle returns the shingle options of --unit, --ngram and --seed.
func (f *Sketch) Shingle() (shingle.Options, error) {
	u, err := shingle.ParseUnit(f.Unit)
	if err != nil {
		return shingle.Options{}, fmt.Errorf("--unit: %s", Plain(err))
	}
	if f.Ngram < 1 || f.Ngram > shingle.MaxN {
		return shingle.Options{}, fmt.Errorf("--ngram %d: must be between 1 and %d", f.Ngram, shingle.MaxN)
	}
	return shingle.Options{Unit: u, N: f.Ngram, Seed: f.Seed}, nil
}

// Spec returns the sketch.Spec of method m from the flags, checked (it
// resolves): only the parameters that apply to m are set, and --bands and
// --rows left at 0 stay 0 (the Spec's banding rule chooses them), so that
// a run can tell given parameters from chosen ones. A bad value is an
// error naming its flag.
func (f *Sketch) Spec(m sketch.Method) (sketch.Spec, error) {
	norm := f.Text
	s := sketch.Spec{Method: m, Normalize: &norm}
	switch m {
	case sketch.MinHash, sketch.SimHash, sketch.Jaccard:
		sh, err := f.Shingle()
		if err != nil {
			return s, err
		}
		s.Shingle = sh
	}
	switch m {
	case sketch.MinHash, sketch.Jaccard:
		if err := CheckUnit01("--threshold", f.Threshold); err != nil {
			return s, err
		}
		s.Threshold = f.Threshold
	}
	switch m {
	case sketch.MinHash:
		if f.NumPerm < 1 || f.NumPerm > minhash.MaxNumPerm {
			return s, fmt.Errorf("--num-perm %d: must be between 1 and %d", f.NumPerm, minhash.MaxNumPerm)
		}
		fam, err := minhash.ParseFamily(f.Family)
		if err != nil {
			return s, fmt.Errorf("--minhash-family: %v", err)
		}
		if f.Bands < 0 || f.Rows < 0 {
			return s, errors.New("--bands and --rows must not be negative")
		}
		if f.Bands*f.Rows > f.NumPerm || f.Bands > f.NumPerm || f.Rows > f.NumPerm {
			return s, fmt.Errorf("--bands %d x --rows %d exceeds --num-perm %d", f.Bands, f.Rows, f.NumPerm)
		}
		s.MinHash = sketch.MinHashSpec{NumPerm: f.NumPerm, Family: fam, Seed: f.Seed, Bands: f.Bands, Rows: f.Rows}
	case sketch.SimHash:
		if f.Bits < 1 || f.Bits > simhash.MaxBits {
			return s, fmt.Errorf("--bits %d: must be between 1 and %d", f.Bits, simhash.MaxBits)
		}
		if f.Distance < 0 || f.Distance >= f.Bits {
			return s, fmt.Errorf("--distance %d: must be between 0 and --bits - 1 (%d)", f.Distance, f.Bits-1)
		}
		w, err := sketch.ParseWeighting(f.Weights)
		if err != nil {
			return s, fmt.Errorf("--weights %q: must be set, count, sublinear or tfidf", f.Weights)
		}
		d := f.Distance
		if d == 0 {
			d = sketch.ExactDistance
		}
		s.SimHash = sketch.SimHashSpec{Bits: f.Bits, Distance: d, Weights: w, Seed: f.Seed}
	case sketch.KSentence:
		if f.KSentences < 1 {
			return s, fmt.Errorf("--k-sentences %d: must be at least 1", f.KSentences)
		}
		s.KSentence.K = f.KSentences
	}
	if _, err := s.Resolve(); err != nil {
		return s, errors.New(strings.TrimPrefix(err.Error(), sketch.ErrSpec.Error()+": "))
	}
	return s, nil
}

// CheckUnit01 validates a value in (0, 1] of the flag name.
func CheckUnit01(name string, v float64) error {
	if !(v > 0 && v <= 1) {
		return fmt.Errorf("%s %v: must be in (0, 1]", name, v)
	}
	return nil
}

// Join holds the flags that say how candidates are decided and which
// document of a cluster is kept.
type Join struct {
	Verify       bool
	EstimateOnly bool
	Keep         string
}

// Register declares --verify, --estimate-only and --keep on fs.
func (j *Join) Register(fs FlagSet) {
	fs.BoolVar(&j.Verify, "verify", false, "minhash, simhash: confirm each candidate pair by exact Jaccard of its shingle sets before it joins a cluster (minhash without it: only the candidates whose estimate is near --threshold)")
	fs.BoolVar(&j.EstimateOnly, "estimate-only", false, "minhash: decide every candidate by its signature estimate, never by exact Jaccard (faster, less memory, imprecise on templated text)")
	fs.StringVar(&j.Keep, "keep", cluster.First.String(), "which document of a cluster to keep: first (in input order) or longest")
}

// libraryPrefixes are the package names neardup's libraries start their
// errors with, as Go libraries do ("store: not a neardup index").
var libraryPrefixes = []string{"store: ", "cluster: ", "shingle: ", "sketch: ", "dedup: ", "staged: ", "executor: ", "objstore: ", "corpus: ", "text: ", "minhash: ", "simhash: "}

// Plain is err's message without the package names its libraries put in
// front of it: for a usage message that names the flag and says the rest
// in the user's words, not the package's.
func Plain(err error) string {
	msg := err.Error()
	for trimmed := true; trimmed; {
		trimmed = false
		for _, p := range libraryPrefixes {
			if strings.HasPrefix(msg, p) {
				msg, trimmed = msg[len(p):], true
			}
		}
	}
	return msg
}

// KeepPolicy parses --keep.
func (j *Join) KeepPolicy() (cluster.Policy, error) {
	p, err := cluster.ParsePolicy(j.Keep)
	if err != nil {
		return p, fmt.Errorf("--keep: %s", Plain(err))
	}
	return p, nil
}

// Fields holds the flags that say where a record's text and id are and
// how large a record may be.
type Fields struct {
	TextField   string
	IDField     string
	MaxDocBytes Size
}

// MaxDocBytesUsage is --max-doc-bytes's help: the flag is a Size, which
// each command line declares with its own Var (flag.Value and pflag.Value
// differ).
const MaxDocBytesUsage = "largest record accepted: bytes, or a size such as 64MB or 1GiB"

// Register declares --text-field and --id-field on fs and sets
// MaxDocBytes to its default; declare --max-doc-bytes with
// fs.Var(&f.MaxDocBytes, "max-doc-bytes", MaxDocBytesUsage).
func (f *Fields) Register(fs FlagSet) {
	f.MaxDocBytes = corpus.DefaultMaxDocBytes
	fs.StringVar(&f.TextField, "text-field", corpus.DefaultTextField, "JSON field that holds the text")
	fs.StringVar(&f.IDField, "id-field", corpus.DefaultIDField, "JSON field that holds the document id (without one the id is FILE:LINE, FILE:ROW in Parquet; for WARC a header, else the record's WARC-Target-URI: docs/formats.md)")
}

// Check reports a bad --text-field or --max-doc-bytes.
func (f *Fields) Check() error {
	if f.MaxDocBytes <= 0 {
		return fmt.Errorf("--max-doc-bytes %d: must be positive", f.MaxDocBytes)
	}
	if f.TextField == "" {
		return errors.New("--text-field must not be empty")
	}
	return nil
}

// Size is an int flag that takes a size with a unit (64MB, 1GiB) as well
// as a plain number of bytes, up to 2 GiB: a flag.Value and a pflag.Value.
type Size int

func (s *Size) String() string { return strconv.Itoa(int(*s)) }

// Set parses v with ParseSize.
func (s *Size) Set(v string) error {
	n, err := ParseSize(v)
	if err != nil {
		return err
	}
	if n > math.MaxInt32 {
		return fmt.Errorf("size %q is above the 2 GiB a record may take", v)
	}
	*s = Size(n)
	return nil
}

// Type names the value in pflag's help.
func (s *Size) Type() string { return "size" }

// ParseSize parses a byte size such as 256MB, 1.5GiB, 512k or 1000000.
// Decimal (KB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB) units are
// accepted; a bare K, M, G or T is binary.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid size %q (want e.g. 256MB or 2GiB)", s)
	}
	mult := map[string]float64{
		"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("invalid size unit in %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s)
	}
	if v*mult > 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v * mult), nil
}
