package dedup

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

// Options holds every parameter of a dedup run. The zero value works: the
// MinHash method with package sketch's defaults (sketch.Default: its
// Default constants, listed in docs/defaults.md), all cores, the first
// document of each cluster kept, half of the machine's RAM as the memory
// budget. Fields that do not apply to the chosen method are ignored.
type Options struct {
	// Method is the method's name: exact, bloom, bloom-overlap, ksentence,
	// simhash, minhash or jaccard (Methods). Empty means Spec.Method. For
	// the methods of package sketch it overrides Spec.Method; bloom and
	// bloom-overlap are dedup's own (bloom-overlap shingles with
	// Spec.Shingle and compares against Spec.Threshold).
	Method string

	// Cascade runs an exact stage before Method (minhash, simhash or
	// jaccard): a document whose normalised text is identical to an
	// earlier document's (same 128-bit XXH3 content id) is joined with
	// that first occurrence and never sketched; Method finds the near
	// duplicates among the first occurrences. The clusters are those of
	// Method alone; Stats.ExactCopies counts the copies. Not with leader
	// clustering, a GPU, Input.Resume, Sign or the staged pipeline.
	Cascade bool

	// Spec is how a document becomes a sketch: normalisation, shingles,
	// the method's parameters and seeds (package sketch; the zero value is
	// its default). Parameters that do not apply to the method are
	// ignored.
	Spec sketch.Spec

	// VerifyThreshold is, for simhash with Verify, the exact Jaccard
	// similarity at or above which a candidate is a duplicate (a SimHash
	// Spec has no threshold); 0 means sketch.DefaultThreshold.
	VerifyThreshold float64

	// IDFFile, with SimHash weights tfidf, is an IDF table to use instead
	// of learning one in a pre-pass; SaveIDF is where a successful run
	// saves the table it used (package simhash's IDF file format).
	IDFFile, SaveIDF string

	// Verify confirms every candidate pair by exact Jaccard of shingle
	// sets against the threshold before it joins a cluster. Without it
	// (and without EstimateOnly) minhash verifies only the candidates whose
	// signature estimate is within a few standard errors of the threshold.
	Verify bool
	// EstimateOnly (minhash) decides every candidate by its signature
	// estimate alone: the join of earlier versions, faster and with less
	// memory, but on templated text single linkage chains its false
	// positives into large wrong clusters (docs/defaults.md).
	EstimateOnly bool

	// Cluster is how pairs become clusters: cluster.Components (connected
	// components of the pairs, single linkage) or cluster.Leader (leader
	// clustering in keep order: every removed document is a verified
	// near-duplicate of the kept document of its cluster: minhash, simhash,
	// and exact and ksentence, whose clusters are the same either way; in
	// memory only).
	Cluster cluster.Mode

	// Bloom: KeyField dedups on this field's value instead of the text
	// (Validate refuses it with another method).
	KeyField string
	// BloomN is the expected number of items; 0: the number of documents
	// if known, else 10M.
	BloomN int
	// BloomFPP is the target false-positive probability; 0 means 1e-6.
	BloomFPP float64
	// BloomSeed seeds the filter's key hash; 0 is the fixed default.
	BloomSeed uint64
	// BloomFile, when set, is a filter file carried across runs: loaded
	// when it exists (its own size and hash count then apply), so that
	// keys of earlier runs count as seen, and saved, atomically, when the
	// run succeeds.
	BloomFile string

	// AllPairs reports every pair the method verifies (at or above the
	// threshold, or within the distance) instead of a spanning forest of
	// each cluster (only the pairs that joined two clusters). The clusters
	// are the same; the pairs output, Stats.Pairs and the similarity
	// histogram differ, and for large clusters all pairs can be many more
	// (quadratic in the cluster size). docs/outputs.md has the details per
	// method.
	AllPairs bool

	// Workers is the number of goroutines that normalise and sketch; 0
	// means GOMAXPROCS.
	Workers int

	// Keep chooses the kept document of each cluster.
	Keep cluster.Policy

	// Memory is the memory budget in bytes; 0 means half of the
	// machine's RAM. When the estimated need of a run exceeds it, methods
	// that support it (see Keyed) spill bucket keys to disk.
	Memory int64
	// Spill forces the spill path for methods that support it.
	Spill bool

	// Device says where documents are sketched: the CPU (the zero
	// value), the GPU, or the GPU when one is usable (see Device).
	Device Device
}

// DefaultBloomFPP is the Bloom filter's false-positive probability when
// Options.BloomFPP is zero.
const DefaultBloomFPP = 1e-6

// Errors of Options, in the library's terms; the command line maps them to
// its flags. Each is wrapped by an *OptionError naming the field.
var (
	// ErrUnknownMethod is returned for a method name that is not one of
	// Methods().
	ErrUnknownMethod = errors.New("unknown method")
	// ErrOptions is wrapped by every OptionError.
	ErrOptions = errors.New("invalid option")
	// ErrConflict is returned for options that cannot be combined.
	ErrConflict = errors.New("conflicting options")
)

// OptionError is an invalid value of one field of Options or Input, or
// two fields that cannot be combined.
type OptionError struct {
	// Field is the field's name, as in Options ("Spec", "Workers",
	// "Cluster", "BloomFPP", "Spec.SimHash.Distance") or, prefixed with
	// "Input.", in Input ("Input.Resume").
	Field string
	// With, for a conflict, is the other field.
	With string
	// Err says what is wrong; it wraps ErrOptions, ErrUnknownMethod,
	// ErrConflict or sketch.ErrSpec.
	Err error
}

func (e *OptionError) Error() string {
	f := e.Field
	if e.With != "" {
		f += " with " + e.With
	}
	return "dedup: " + f + ": " + e.Err.Error()
}

func (e *OptionError) Unwrap() error { return e.Err }

// Reason is what is wrong, without the field and the sentinel error's text.
func (e *OptionError) Reason() string {
	msg := e.Err.Error()
	for _, s := range []error{ErrOptions, ErrConflict, sketch.ErrSpec} {
		msg = strings.TrimPrefix(msg, s.Error()+": ")
	}
	return msg
}

// optErr returns an *OptionError for field, wrapping ErrOptions.
func optErr(field, format string, args ...any) error {
	return &OptionError{Field: field, Err: fmt.Errorf("%w: "+format, append([]any{ErrOptions}, args...)...)}
}

// conflict returns an *OptionError for field with another field, wrapping
// ErrConflict.
func conflict(field, with, format string, args ...any) error {
	return &OptionError{Field: field, With: with, Err: fmt.Errorf("%w: "+format, append([]any{ErrConflict}, args...)...)}
}

// methodName returns the run's method name.
func (c *Options) methodName() string {
	if c.Method != "" {
		return c.Method
	}
	return c.Spec.Method.String()
}

// spec returns the resolved sketch specification of the run: Spec with
// Method set from the method name (bloom: exact, bloom-overlap: jaccard)
// and the parameters of other methods cleared. For simhash it also
// returns the Verify threshold.
func (c *Options) spec() (s sketch.Spec, threshold float64, err error) {
	s = c.Spec
	switch name := c.methodName(); name {
	case "bloom":
		s.Method = sketch.Exact
	case "bloom-overlap":
		s.Method = sketch.Jaccard
	default:
		if s.Method, err = sketch.ParseMethod(name); err != nil {
			return s, 0, &OptionError{Field: "Method", Err: fmt.Errorf("%w %q (want one of %s)", ErrUnknownMethod, name, methodList())}
		}
	}
	threshold = c.VerifyThreshold
	if s.Method == sketch.SimHash {
		if threshold == 0 {
			threshold = sketch.DefaultThreshold
		}
		if !(threshold > 0 && threshold <= 1) {
			return s, 0, optErr("VerifyThreshold", "%v must be in (0, 1]", threshold)
		}
	}
	if s.Method != sketch.MinHash {
		s.MinHash = sketch.MinHashSpec{}
	}
	if s.Method != sketch.SimHash {
		s.SimHash = sketch.SimHashSpec{}
	}
	if s.Method != sketch.KSentence {
		s.KSentence = sketch.KSentenceSpec{}
	}
	switch s.Method {
	case sketch.SimHash, sketch.Exact, sketch.KSentence:
		s.Threshold = 0
	}
	if s.Method == sketch.Exact || s.Method == sketch.KSentence {
		s.Shingle = shingle.Options{}
	}
	if s, err = s.Resolve(); err != nil {
		return s, 0, &OptionError{Field: "Spec", Err: err}
	}
	if s.Method != sketch.SimHash {
		threshold = s.Threshold
	}
	return s, threshold, nil
}

// ResolveSpec returns the run's resolved sketch specification, as
// Stats.Spec records it: Spec with its method from Method (bloom: Exact,
// bloom-overlap: Jaccard), the parameters of other methods cleared, every
// default filled in. Its errors are *OptionError.
func (c *Options) ResolveSpec() (sketch.Spec, error) {
	s, _, err := c.spec()
	return s, err
}

// ReaderOptions returns ro as the run's readers use it: with
// corpus.Options.HTMLMain set when the normalisation keeps the main
// content of HTML (Normalize.HTML without HTMLAll), so that the pages of
// web archives, which the readers turn into text themselves, are compared
// on their main content as JSONL pages are. Run applies it to
// Input.Options; a caller that reads the input again on its own (the
// staged write stage) applies it too. Its errors are those of ResolveSpec.
func (c *Options) ReaderOptions(ro corpus.Options) (corpus.Options, error) {
	s, err := c.ResolveSpec()
	if err != nil {
		return ro, err
	}
	ro.HTMLMain = htmlMain(s)
	return ro, nil
}

// htmlMain reports whether the resolved spec s keeps the main content of
// HTML.
func htmlMain(s sketch.Spec) bool {
	return s.Normalize != nil && s.Normalize.HTML && !s.Normalize.HTMLAll
}

// Validate checks the parameters shared by every method; methods check
// their own at construction.
func (c *Options) Validate() error {
	if c.Workers < 0 {
		return optErr("Workers", "%d must not be negative (0 means all cores)", c.Workers)
	}
	if c.Cluster == cluster.Leader {
		switch c.methodName() {
		case "minhash", "simhash":
		case "exact", "ksentence":
			// Their clusters are sets of identical sketches: every member
			// is a duplicate of the kept one, leader and components agree.
		default:
			return conflict("Cluster", "Method", "leader clustering is offered by minhash, simhash, exact and ksentence (not %s)", c.methodName())
		}
	}
	if c.Cascade {
		switch c.methodName() {
		case "minhash", "simhash", "jaccard":
		default:
			return conflict("Cascade", "Method", "the cascade's near-duplicate stage is minhash, simhash or jaccard (not %s); exact alone finds the exact copies", c.methodName())
		}
		if c.Cluster == cluster.Leader {
			return conflict("Cascade", "Cluster", "leader clustering chooses leaders among every document in keep order, which the cascade's exact stage does not follow: run the method alone")
		}
		if c.Device != DeviceCPU {
			return conflict("Cascade", "Device", "the cascade sketches on the CPU workers (the GPU batches cannot skip the exact copies): run the method alone with the GPU")
		}
	}
	// Only bloom reads a key; another method would still require the
	// field on every record and then ignore it. (bloom-overlap refuses it
	// with its own reason, in newBloom.)
	if c.KeyField != "" && c.methodName() != "bloom" && c.methodName() != "bloom-overlap" {
		return conflict("KeyField", "Method", "%s: only bloom deduplicates on a key (not %s)", c.KeyField, c.methodName())
	}
	_, _, err := c.spec()
	return err
}

func (c *Options) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.GOMAXPROCS(0)
}
