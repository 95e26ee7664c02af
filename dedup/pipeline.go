package dedup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// Outputs names the files a run writes; an empty name writes nothing. "-"
// is standard output. Regular files are replaced atomically when the run
// succeeds and left untouched when it fails.
type Outputs struct {
	// Kept receives the kept documents, unchanged, in input order; the
	// format follows the name (see package corpus).
	Kept string
	// Clusters receives one JSON line per input document:
	// {"id", "cluster" (id of the kept document), "kept"}.
	Clusters string
	// Pairs receives one JSON line per duplicate pair found:
	// {"id1", "id2", "similarity"} and "distance" for bit fingerprints.
	Pairs string
	// TmpDir holds temporary files (a copy of standard input); "" means
	// the system default.
	TmpDir string
	// Removed, when set, is called with the id of every removed document,
	// in input order, once the clusters are known (the report's list of
	// removed ids).
	Removed func(id string)
	// OnCluster, when set, is called once for every input document, in
	// input order, once the clusters are known, with what its line of
	// Clusters says: its id, its cluster (the id of the kept document)
	// and whether it is the one kept. For a Go program that wants the
	// clusters without a file.
	OnCluster func(id, cluster string, kept bool)
}

// Input says what to read.
type Input struct {
	// Files are read in order; "-" is JSONL on Options.Stdin.
	Files []string
	// Against are the files of an old corpus: a document of Files that
	// duplicates one of them is removed, and they are never removed,
	// written or listed themselves.
	Against []string
	// AgainstIndexes are saved indexes of old documents (the command
	// line's --against with an index directory). Every document of Files
	// is looked up in each, with the index's own parameters; one that
	// matches is removed together with every document of its cluster, and
	// the cluster is named after the indexed document. They cannot be
	// combined with Resume.
	AgainstIndexes []Index
	// Options configures the readers. OnInvalid is set by Run when
	// SkipInvalid is true.
	Options corpus.Options
	// SkipInvalid skips bad records (counted in Stats.Skipped) instead of
	// stopping at the first.
	SkipInvalid bool
	// Sources are inputs that are not files: documents from anywhere, of
	// any format (a database cursor, a network stream, documents in
	// memory, a corpus.Reader of a format of your own). They are read after
	// Files, in order. They cannot be combined with Resume.
	Sources []Source
	// Stdin is what "-" reads; nil means os.Stdin. It is streamed: a
	// run that reads its input twice (a method's pre-pass, the kept
	// documents, the examples) keeps a copy in Outputs.TmpDir, zstd
	// compressed unless it came compressed (Stats.Stdin).
	Stdin io.Reader
	// FilesSkipped are the paths that walking the input directories left
	// out (corpus.ExpandWith), and FilesExcluded how many --exclude
	// matched; both are reported in Stats.
	FilesSkipped  []corpus.Skip
	FilesExcluded int
	// Examples is how many of the largest clusters Stats.Examples shows.
	Examples int
	// RandomExamples is how many other clusters with duplicates, drawn at
	// random with a fixed seed, Stats.Examples shows after the largest.
	RandomExamples int
	// Progress, when set, is told how the run advances.
	Progress Progress
	// OnPlan, when set, is called with the memory plan before the
	// documents are read (the command line sets the garbage collector's
	// memory limit from it).
	OnPlan func(MemoryPlan)
	// OnFirstPass, when set, is called once the first pass has given the
	// Finder every document, before the Finder is flushed: what the run
	// holds for its documents is then at its largest (the command line's
	// hidden --memprofile takes a heap profile there).
	OnFirstPass func()
	// Resume checkpoints every input file once it has been processed, and
	// takes the sketches of files checkpointed by an earlier, interrupted
	// run with the same configuration and unchanged inputs instead of
	// reading them again. It needs a method with a SketchCodec.
	Resume bool
}

// Stats summarises a run.
type Stats struct {
	Method string `json:"method"`
	// Spec is the run's resolved sketch specification (Options.ResolveSpec).
	Spec sketch.Spec `json:"spec"`
	// Params are what the method decided beyond Spec.
	Params    Facts `json:"params"`
	Workers   int   `json:"workers"`
	Documents int   `json:"documents"`
	Against   int   `json:"against_documents,omitempty"`
	// Resumed is how many input files came from checkpoints (--resume).
	Resumed        int `json:"resumed_files,omitempty"`
	Kept           int `json:"kept"`
	Removed        int `json:"removed"`
	Clusters       int `json:"clusters"` // clusters with more than one member
	LargestCluster int `json:"largest_cluster"`
	Pairs          int `json:"pairs"`
	// Cascade says that an exact stage ran before the method
	// (Options.Cascade): ExactCopies documents were joined with an
	// earlier document of identical normalised text without being
	// sketched; the other removed documents (Removed - ExactCopies) are
	// near duplicates. A copy of a document with no shingle joins nothing
	// and is not counted.
	Cascade     bool `json:"cascade,omitempty"`
	ExactCopies int  `json:"exact_copies,omitempty"`
	// Dropped counts documents removed as duplicates of an unnamed earlier
	// document (bloom: the filter says the key was seen): each is its own
	// cluster, not kept, and has no pairs line.
	Dropped int `json:"dropped,omitempty"`
	// RemovedBelowThreshold counts the removed documents whose exact
	// similarity to the kept document of their cluster is below the
	// threshold: in connected components (single linkage) two members can
	// be joined through a chain of pairs. Reported by minhash (without
	// --estimate-only: from its shingle sets) and simhash, in memory or
	// on the spill path (the same count); 0 under --cluster leader by
	// construction.
	RemovedBelowThreshold *int `json:"removed_below_threshold,omitempty"`
	// IndexMatches counts the documents found in an Input.AgainstIndexes
	// index (each removed with its cluster).
	IndexMatches int `json:"index_matches,omitempty"`
	Skipped      int `json:"skipped"` // invalid records skipped
	// DuplicateIDs counts the ids that more than one document has (each
	// such id once): --clusters then has several lines for one id.
	// DuplicateIDsFirst lists the first few in input order.
	DuplicateIDs      int      `json:"duplicate_ids,omitempty"`
	DuplicateIDsFirst []string `json:"duplicate_ids_first,omitempty"`
	// IDsFromPosition counts the input documents whose id is their
	// position, FILE:LINE (FILE:RECORD), because the record had no id
	// field (Input.Options.IDField) or an empty one (not the lines of
	// plain text, which have no id field); IDsFromPositionFirst
	// is the first of them in input order. Not in --stats (the staged
	// job's --stats is dedup's; it keeps them apart, for the same
	// warning).
	IDsFromPosition      int    `json:"-"`
	IDsFromPositionFirst string `json:"-"`
	// Damaged lists the input files whose stream was damaged (a
	// truncated or corrupt gzip or zstd stream, a broken Parquet file, a
	// web archive cut short), found with SkipInvalid: the documents read
	// before the damage are used, what followed it is lost. Without
	// SkipInvalid the run stops at the damage.
	Damaged []DamagedFile `json:"damaged_files,omitempty"`
	// FilesSkipped counts the paths in input directories that were not
	// read (unsupported names, second links to one file, directories
	// already walked); FilesSkippedFirst lists the first few.
	FilesSkipped      int           `json:"files_skipped,omitempty"`
	FilesSkippedFirst []corpus.Skip `json:"files_skipped_first,omitempty"`
	// FilesExcluded counts the paths left out by --exclude.
	FilesExcluded int `json:"files_excluded,omitempty"`
	// Stdin says how standard input was read, when it was an input.
	Stdin      *StdinStats `json:"stdin,omitempty"`
	Empty      int         `json:"empty"` // documents with empty normalised text
	InputBytes int64       `json:"input_bytes"`
	Stages     []Stage     `json:"stages"`
	// SerialSeconds is the CPU time the run spent where only one
	// goroutine works, which more cores cannot shorten: the sum of
	// SerialParts. Over the stages' CPU seconds it is the run's serial
	// fraction.
	SerialSeconds float64 `json:"serial_seconds"`
	// SerialParts are the parts of SerialSeconds, each the CPU time of
	// its goroutine's thread (wall time where the system does not tell a
	// thread's): "read" (the reader: decompressing each input and
	// splitting it into records, one stream at a time, or into blocks of
	// whole lines for JSONL files; a zstd decoder's own goroutines are not
	// in it), "collect" (the collector: counts, ids
	// and each sketch handed to the Finder in input order), the component
	// join's "components" (grouping the documents by component) and
	// "emit pairs" (ordering the pairs and writing the pairs file),
	// "cluster" (choosing the kept documents), and the write stage's
	// "write records" (the kept records, in order), "write clusters" (the
	// clusters file, beside it) or "write: read again" (the whole second
	// pass over the input, where the first did not keep a copy).
	SerialParts []SerialPart `json:"serial_parts,omitempty"`
	// Phases are parts of a stage timed apart (the component join's:
	// "components", "replay" and "emit pairs", within read+sketch+find).
	Phases   []Stage   `json:"phases,omitempty"`
	Examples []Example `json:"examples,omitempty"`
	// SkippedErrors holds the first MaxSkippedErrors skipped records'
	// errors, in input order.
	SkippedErrors []string `json:"skipped_errors,omitempty"`
	// ClusterSizes counts clusters by size, sizes ascending (singletons
	// included).
	ClusterSizes []SizeCount `json:"cluster_sizes"`
	// Similarity counts the reported pairs by similarity in 20 bins of
	// width 0.05: bin i holds [i/20, (i+1)/20), the last bin includes 1.
	Similarity [20]int `json:"similarity_histogram"`
	// Distance counts the reported pairs by Hamming distance, for methods
	// that report one (index = distance).
	Distance []int `json:"distance_histogram,omitempty"`
	// Memory is the estimate made before the run and the spill decision.
	Memory MemoryPlan `json:"memory"`
	// PeakRSSBytes is the process's peak resident set size at the end.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// AbandonedFiles and AbandonedBytes count the temporary files that
	// earlier runs killed before they finished left in Outputs.TmpDir
	// (spill files) and beside the outputs, removed by this run (package
	// internal/tempfile names them after their owner process).
	AbandonedFiles int   `json:"abandoned_temp_files,omitempty"`
	AbandonedBytes int64 `json:"abandoned_temp_bytes,omitempty"`
	// Traditional counts the documents whose normalised text holds
	// Traditional Chinese characters while Options.Normalize.T2S is off
	// (t2s.ChineseWithTraditional): their Simplified copies are not recognised as
	// duplicates, which T2S would fix. Always 0 with T2S on.
	Traditional int `json:"traditional_docs,omitempty"`
	// HTMLNoMainContent counts the documents in which the HTML step of
	// Options.Normalize (HTML without HTMLAll) found no main content
	// (text.MainText): they were compared on their whole visible text,
	// or were empty. Pages of web archives are extracted by the reader
	// (corpus.Options.HTMLMain) and are not counted.
	HTMLNoMainContent int `json:"html_no_main_content,omitempty"`
	// HTMLLike counts the documents whose text starts as an HTML page
	// does (<!DOCTYPE html or <html, after white space) while
	// Options.Normalize.HTML is off: their markup and the site's template
	// are compared as text, which --html would leave out. Always 0 with
	// HTML on.
	HTMLLike int `json:"html_like_docs,omitempty"`
	// Device says where the documents were sketched, when Options.Device
	// is not DeviceCPU.
	Device *DeviceStats `json:"device,omitempty"`
}

// DamagedFile is an input file whose stream was damaged.
type DamagedFile struct {
	File string `json:"file"`
	// Record is the line or record number reached.
	Record int64 `json:"record"`
	// Offset is the byte offset in the file (compressed) where reading
	// stopped, and Unread how many bytes of the file were not read; -1
	// when unknown (standard input, formats without a stream offset).
	Offset int64 `json:"offset"`
	Unread int64 `json:"unread_bytes"`
	// Resumed is true when reading went on after the damage (a web
	// archive with a gzip member per record loses one member's data).
	Resumed bool   `json:"resumed,omitempty"`
	Error   string `json:"error"`
}

// DamagedFileOf describes the damage a record error wrapping
// corpus.ErrCorrupt reports.
func DamagedFileOf(e *corpus.RecordError) DamagedFile {
	d := DamagedFile{File: e.File, Record: e.Record, Offset: -1, Unread: -1, Error: e.Error()}
	var se *corpus.StreamError
	if errors.As(e, &se) {
		d.Offset, d.Unread, d.Resumed = se.Offset, se.Unread(), se.Resumes
	}
	return d
}

// MaxSkippedErrors caps Stats.SkippedErrors.
const MaxSkippedErrors = 10

// maxFilesSkippedListed caps Stats.FilesSkippedFirst.
const maxFilesSkippedListed = 10

// SizeCount is the number of clusters of one size.
type SizeCount struct {
	Size  int `json:"size"`
	Count int `json:"count"`
}

// Stage is the wall time of one stage of the run.
type Stage struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the process's user plus system CPU time during the
	// stage, on all threads: on a shared machine it is the steadier
	// figure.
	CPUSeconds float64 `json:"cpu_seconds"`
	// Documents and Bytes are what the stage went through (input bytes
	// as read, decompressed), with their rates over Seconds.
	Documents     int64   `json:"documents"`
	Bytes         int64   `json:"bytes"`
	DocsPerSecond float64 `json:"docs_per_second"`
	MBPerSecond   float64 `json:"mb_per_second"`
	// PeakRSSBytes is the process's peak resident set size at the end of
	// the stage (it only grows: the stage that raised it is the first
	// with the higher value).
	PeakRSSBytes int64 `json:"peak_rss_bytes,omitempty"`
}

// Example is one cluster, for the summary and the report: the kept
// document first, then up to ExampleMembers-1 others in input order.
type Example struct {
	// Kind is "largest" or "random".
	Kind    string       `json:"kind"`
	Size    int          `json:"size"`
	Members []ExampleDoc `json:"members"`
	// Index is the id of the document of an Input.AgainstIndexes index
	// that the cluster duplicates (its kept member, not among Members).
	Index string `json:"index,omitempty"`
}

// ExampleDoc is one member of an example cluster.
type ExampleDoc struct {
	ID string `json:"id"`
	// Text is the document's text as read; with Options.Normalize.HTML,
	// the text extracted from its HTML (text.ExtractHTML: the main content,
	// or the whole visible text with Normalize.HTMLAll), which is
	// what the method compared, not the markup.
	Text string `json:"text"`
	Kept bool   `json:"kept"`
}

// Index is a saved index of old documents that new documents are checked
// against (package store through the command line). An Index that is also
// a NormalizedIndex or a SketchIndex of the run's own specification is
// given the run's normalised text or sketch instead of the raw text.
type Index interface {
	// NewChecker returns a function that looks up a document's raw text
	// and returns the id and similarity of its best duplicate, if any.
	// Each checker is used by one goroutine; checkers of one Index may
	// run concurrently.
	NewChecker() (func(text string) (id string, sim float64, found bool, err error), error)
	// MemoryBytes is what the index holds in memory, for the memory plan.
	MemoryBytes() int64
}

// NormalizedIndex is an Index whose checkers can also look a document up
// by its normalised text. A run whose resolved specification equals the
// index's (Spec, compared whole) normalises each document once and hands
// the index that text: the index's sketch of it is then the one it would
// make of the raw text, without normalising it a second time.
type NormalizedIndex interface {
	Index
	// Spec is the index's specification, resolved.
	Spec() sketch.Spec
	// NewNormalizedChecker is NewChecker for a text normalised with
	// Spec().Normalize.
	NewNormalizedChecker() (func(norm []byte) (id string, sim float64, found bool, err error), error)
}

// SketchIndex is a NormalizedIndex whose checkers can also look a
// document up by its sketch made with the index's specification: for
// MinHash its signature and sorted, distinct shingle set, for SimHash its
// fingerprint (no set), or Empty. A MinHash or SimHash run of that
// specification hands it the sketch it made, without the index sketching
// the text a second time.
type SketchIndex interface {
	NormalizedIndex
	// NewSketchChecker is NewChecker for a sketch; the checker neither
	// keeps nor changes it.
	NewSketchChecker() (func(sk *sketch.Sketch) (id string, sim float64, found bool, err error), error)
}

// reusedSketcher is a DocSketcher that gives the sketch.Sketch of the
// document it sketched last (the minhash and simhash methods', and a
// cascade's over either), for a SketchIndex.
type reusedSketcher interface {
	sketchSpec() sketch.Spec
	// lastSketch is the sketch.Sketch of the document Sketch was last
	// given, valid until the next Sketch; false when Sketch made none
	// of the method's for it (a cascade's copy), which is then looked up
	// by its normalised text.
	lastSketch() (sketch.Sketch, bool)
}

// reusedOf is sk as a reusedSketcher, or nil: a cascade's sketcher is
// one when the method's is.
func reusedOf(sk DocSketcher) reusedSketcher {
	if c, ok := sk.(*cascadeSketcher); ok {
		if _, ok := c.inner.(reusedSketcher); !ok {
			return nil
		}
	}
	rs, _ := sk.(reusedSketcher)
	return rs
}

// indexHit is a new document's best duplicate in an Index.
type indexHit struct {
	id  string
	sim float64
}

// Run deduplicates the input: it reads every document, normalises and
// sketches it on cfg.Workers goroutines, hands the sketches to the method's
// finder in input order, joins the pairs into clusters, keeps one document
// per cluster by cfg.Keep, and writes the outputs. The result does not
// depend on the number of workers.
func Run(ctx context.Context, cfg Options, in Input, out Outputs) (*Stats, error) {
	r, err := newRun(cfg, in, out)
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	if err := r.open(); err != nil {
		return nil, err
	}
	if err := r.pass1(ctx); err != nil {
		return nil, err
	}
	if err := r.finish(ctx); err != nil {
		return nil, err
	}
	if p := r.caps.persist; p != nil {
		if err := p.Persist(); err != nil {
			return nil, err
		}
	}
	if r.ckpt != nil {
		for _, res := range r.ckpt.resumed {
			if res {
				r.stats.Resumed++
			}
		}
		if err := os.RemoveAll(r.ckpt.dir); err != nil {
			return nil, err
		}
	}
	return r.stats, nil
}

// Sign writes each document's sketch (signature, fingerprint, hash) to
// path as one JSON line {"id", "method", "sketch"} per document, in input
// order; an empty document has a null sketch.
func Sign(ctx context.Context, cfg Options, in Input, path string) (*Stats, error) {
	r, err := newRun(cfg, in, Outputs{})
	if err != nil {
		return nil, err
	}
	defer r.cleanup()
	m := r.method
	if cfg.Cascade {
		return nil, optErr("Cascade", "sign writes every document's sketch, and the cascade skips those of exact copies: sign with --method %s", m.Name())
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	f, err := r.create(path)
	if err != nil {
		return nil, err
	}
	r.stats.Memory = r.plan()
	if err := r.prePass(ctx); err != nil {
		return nil, err
	}
	start := newMark()
	r.in.Progress.Stage("sign", r.stats.Memory.EstimatedDocs)
	r.signOnly = true
	w := bufio.NewWriterSize(f, 1<<16)
	prefix := append(corpus.AppendJSONString([]byte(`,"method":`), m.Name()), `,"sketch":`...)
	r.linePrefix = prefix // the workers write the lines (lineSketcher)
	var line []byte
	err = r.sketchAll(ctx, func(_ int, d *rawDoc, s DocSketch) error {
		r.stats.Documents++
		if l, ok := s.(signedLine); ok {
			_, err := w.Write(l)
			return err
		}
		line = corpus.AppendJSONString(append(line[:0], `{"id":`...), d.id)
		line = append(line, prefix...)
		if s == nil {
			line = append(line, "null"...)
		} else {
			line = s.AppendJSON(line)
		}
		line = append(line, "}\n"...)
		_, err := w.Write(line)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	if err := f.Commit(); err != nil {
		return nil, err
	}
	r.stage("sign", start, int64(r.stats.Documents), r.stats.InputBytes)
	return r.stats, nil
}

type run struct {
	cfg    Options
	spec   sketch.Spec // resolved (Options.spec)
	in     Input
	out    Outputs
	method Method
	caps   capabilities // the method's, found once
	norm   *text.Normalizer
	stats  *Stats
	// traditional counts the documents with Traditional Chinese
	// characters when Normalize.T2S is off (Stats.Traditional).
	traditional atomic.Int64
	// noMain counts the documents without main content
	// (Stats.HTMLNoMainContent).
	noMain atomic.Int64
	// htmlLike counts the documents that look like HTML pages while the
	// HTML step is off (Stats.HTMLLike).
	htmlLike atomic.Int64
	// signOnly: the run is Sign (sketches are written, not compared);
	// linePrefix is what its lines hold between the id and the sketch.
	signOnly   bool
	linePrefix []byte

	stdin   *stdin            // when "-" is an input
	sources map[string]Source // Input.Sources by their names in Input.Files
	// openFile and ranges: a staged sign task's reader (SketchRanges).
	openFile func(name string, opts corpus.Options) (corpus.Reader, error)
	ranges   map[string]DocRange
	// want, when not nil, says which documents to sketch, by Doc.Index
	// (SketchSome); the others get a nil sketch. With wantExact (no
	// record skipped, so Doc.Index is the document's number) the others
	// are not even parsed: their id and text are empty.
	want       func(index int) bool
	wantExact  bool
	stdinAgain bool // a later pass reads standard input again
	pairsOut   *atomicfile.File
	pairsBuf   *bufio.Writer
	// pairsLater: the reported pairs are gathered in reported and their
	// lines made on the workers (writeReported): after the Finder's Flush
	// (the component join, whose Flush emits every pair), or whenever
	// pairsHold of them are gathered (the spill join, which must not hold
	// them all: 0 means no bound).
	pairsLater  bool
	pairsHold   int
	reported    []Pair
	allPairs    []Pair                      // Options.AllPairs: the pairs found, written after the finder's Flush
	held        []Pair                      // the pairs an emitter(true) held, written before the Finder's Flush (pass1)
	sequence    []string                    // Input.Against, then Input.Files
	linesFiles  []int8                      // readsLines of each of sequence: 0 not yet known, 1 yes, -1 no
	fileSkipped []int                       // per file of sequence
	fileBytes   []int64                     // per file of sequence
	fileDamaged []bool                      // per file of sequence
	written     struct{ docs, bytes int64 } // read by the write pass
	ckpt        *checkpointer
	keptCopy    *keptCopy                                       // the first pass's records, for the write stage (see keptCopy)
	serial      serialParts                                     // Stats.SerialParts
	ids         []string                                        // old documents (Input.Against) first
	nOld        int                                             // how many of ids are old
	dropped     map[int32]bool                                  // removed by a DropFinder, with no named partner
	checkers    [][]func(string) (string, float64, bool, error) // [worker][index], in pass 1
	// normCheckers replace checkers when every index is a NormalizedIndex
	// of the run's own specification (newCheckers).
	normCheckers [][]func([]byte) (string, float64, bool, error)
	// sketchCheckers come with normCheckers when every index is a
	// SketchIndex: a worker whose sketcher is a reusedSketcher of the
	// run's specification hands them its sketches.
	sketchCheckers [][]func(*sketch.Sketch) (string, float64, bool, error)
	indexHits      map[int32]indexHit // new documents found in an index
	labels         map[int32]string   // kept index -> indexed id naming its cluster
	hitLine        []byte             // an index hit's or a waiting copy's pairs line, reused
	// waiting are the lines that wait for the spill join's pairs
	// (waitLines), in input order: they come at Flush, ordered by their
	// later document, and the in-memory Finder's stream (minhash, exact,
	// ksentence) writes each document's index hit, and a cascade's copy,
	// after its pairs. One entry (8 bytes) for each document found in an
	// index or, with an index, each cascade copy: bounded by the input's
	// documents, as ids is.
	waiting []waitingLine
	// waitLines: the index hits' and the copies' lines wait (waiting).
	// Only on the spill path with --pairs, an index and a spanning
	// forest in input order: a Finder that reports at Flush in memory
	// (simhash's order) writes them first, as read, spilled or not.
	waitLines bool
	lengths   []int32
	uf        *cluster.UnionFind
	finder    Finder   // the run's finder, until finish has asked it about the kept documents
	outputs   []output // committed together at the end
	closers   []io.Closer
	// finderCaps are the finder's capabilities, found once.
	finderCaps finderCapabilities
	// cascade is the exact stage of Options.Cascade (nil without it).
	cascade *cascade
}

// mark is the start of a stage: the wall clock and the CPU time used so far.
type mark struct {
	wall time.Time
	cpu  float64
}

func newMark() mark { return mark{time.Now(), cpuSeconds()} }

// stage records a stage that began at since and went through docs
// documents of bytes bytes.
func (r *run) stage(name string, since mark, docs, bytes int64) {
	st := Stage{Name: name, Seconds: time.Since(since.wall).Seconds(), CPUSeconds: cpuSeconds() - since.cpu,
		Documents: docs, Bytes: bytes, PeakRSSBytes: PeakRSS()}
	if st.Seconds > 0 {
		st.DocsPerSecond = float64(docs) / st.Seconds
		st.MBPerSecond = float64(bytes) / 1e6 / st.Seconds
	}
	r.stats.Stages = append(r.stats.Stages, st)
}

// open copies standard input aside when it is an input (so it can be read
// twice) and opens the pairs output, which is written while reading.
func (r *run) open() error {
	if swept, err := sweepSpill(r.out.TmpDir); err == nil {
		r.abandoned(swept)
	}
	r.sequence = append(slices.Clone(r.in.Against), r.in.Files...)
	r.fileSkipped = make([]int, len(r.sequence))
	r.fileBytes = make([]int64, len(r.sequence))
	r.fileDamaged = make([]bool, len(r.sequence))
	if r.in.Resume {
		codec := r.caps.codec
		if codec == nil {
			return conflict("Input.Resume", "Method", "method %s cannot checkpoint its sketches", r.method.Name())
		}
		dir, err := stateDir(r.out.TmpDir, r.cfg, r.method, r.in)
		if err != nil {
			return err
		}
		r.ckpt = &checkpointer{dir: dir, codec: codec, names: r.sequence, resumed: make([]bool, len(r.sequence)),
			skipped: r.fileSkipped, bytes: r.fileBytes, damaged: r.fileDamaged}
	}
	if slices.Contains(r.in.Files, "-") {
		r.stdin = newStdin(r.in.Stdin, r.out.TmpDir)
		r.stats.Stdin = &r.stdin.stats
	}
	if r.out.Pairs != "" {
		f, err := r.create(r.out.Pairs)
		if err != nil {
			return err
		}
		r.pairsOut = f
		r.pairsBuf = bufio.NewWriterSize(f, 1<<16)
	}
	return nil
}

func (r *run) create(path string) (*atomicfile.File, error) {
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	r.abandoned(f.Swept())
	r.outputs = append(r.outputs, f)
	return f, nil
}

// abandoned counts temporary files of killed runs that this run removed.
func (r *run) abandoned(s tempfile.Swept) {
	r.stats.AbandonedFiles += s.Files
	r.stats.AbandonedBytes += s.Bytes
}

// newRun validates cfg and builds the method and the normaliser of a run.
// The caller must defer r.cleanup().
func newRun(cfg Options, in Input, out Outputs) (*run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := NewMethod(cfg)
	if err != nil {
		return nil, err
	}
	spec, _, err := cfg.spec()
	if err != nil {
		return nil, err
	}
	norm, err := text.New(*spec.Normalize)
	if err != nil {
		return nil, err
	}
	in.Options.HTMLMain = htmlMain(spec)
	if in.Resume && len(in.AgainstIndexes) > 0 {
		return nil, conflict("Input.Resume", "Input.AgainstIndexes", "cannot be combined: the index lookups are not checkpointed")
	}
	if in.Resume && cfg.Cascade {
		return nil, conflict("Input.Resume", "Cascade", "cannot be combined: the cascade's exact copies are not checkpointed")
	}
	if in.Resume && len(in.Sources) > 0 {
		return nil, conflict("Input.Resume", "Input.Sources", "cannot be combined: a source has no file to checkpoint against")
	}
	var sources map[string]Source
	if len(in.Sources) > 0 {
		sources = make(map[string]Source, len(in.Sources))
		in.Files = slices.Clone(in.Files)
		for i, src := range in.Sources {
			if src.Open == nil {
				return nil, optErr(fmt.Sprintf("Input.Sources[%d].Open", i), "is nil")
			}
			name := src.key(i)
			sources[name] = src
			in.Files = append(in.Files, name)
		}
	}
	if in.Progress == nil {
		in.Progress = noProgress{}
	}
	st := &Stats{Method: m.Name(), Spec: spec, Params: m.Facts(), Workers: cfg.workers(),
		FilesSkipped: len(in.FilesSkipped), FilesExcluded: in.FilesExcluded}
	st.FilesSkippedFirst = in.FilesSkipped[:min(len(in.FilesSkipped), maxFilesSkippedListed)]
	r := &run{cfg: cfg, spec: spec, in: in, out: out, method: m, caps: capabilitiesOf(m), norm: norm, stats: st, sources: sources}
	if cfg.Cascade {
		r.cascade = newCascade()
		st.Cascade = true
	}
	return r, nil
}

// A Source is an input of Run that is not a file it opens by name.
type Source struct {
	// Name names the source in messages and Stats, and in the ids of
	// documents without one ("NAME:LINE", as the source's reader makes
	// them).
	Name string
	// Open returns a new reader of the source's documents, from the first,
	// in the same order each time: Run reads an input up to three times (a
	// method's pre-pass, the main pass, and the pass that writes the kept
	// documents and the examples) and closes every reader it opens. opts
	// are the run's reader options (Input.Options, with OnInvalid set for
	// SkipInvalid); a reader should honour them where they apply.
	Open func(opts corpus.Options) (corpus.Reader, error)
	// Size is the source's size in bytes for the memory plan (0: not
	// known; --spill then decides for a source larger than memory).
	Size int64
}

// key is the name the run gives source i among its inputs: its Name,
// marked so that it cannot be a file's.
func (s Source) key(i int) string { return fmt.Sprintf("<source %d: %s>", i, s.Name) }

// output is a file written atomically: nothing appears under its name
// until Commit.
type output interface {
	Commit() error
	Abort() error
}

// cleanup aborts outputs not committed and removes temporary files.
func (r *run) cleanup() {
	r.in.Progress.Done()
	r.ckpt.abort()
	for _, f := range r.outputs {
		f.Abort()
	}
	for _, c := range r.closers {
		c.Close()
	}
	if r.stdin != nil {
		r.stdin.remove()
	}
}

// readAllOpts calls fn for every document of files, in order, on the
// calling goroutine; onSkip is told of the records skipped as invalid
// (Input.SkipInvalid).
func (r *run) readAllOpts(ctx context.Context, files []string, opts corpus.Options, fn func(*corpus.Document) error, onSkip func(*corpus.RecordError)) error {
	if r.in.SkipInvalid {
		opts.OnInvalid = func(e *corpus.RecordError) error {
			if onSkip != nil {
				onSkip(e)
			}
			return nil
		}
	}
	for _, name := range files {
		if err := r.readFile(ctx, name, opts, fn, nil); err != nil {
			return err
		}
	}
	return nil
}

// readFile calls fn for every document of one input (a file, "-" or a
// Source's name) read with opts.
// readFile calls fn for each document of the input name. With lines, a
// JSONL file read with Options.RawOnly also goes to lines, which takes the
// whole lines the reader has buffered (corpus.JSONL.Lines) and returns
// whether there were any; fn gets the records between them.
func (r *run) readFile(ctx context.Context, name string, opts corpus.Options, fn func(*corpus.Document) error, lines func(*corpus.JSONL) (bool, error)) error {
	var rd corpus.Reader
	var err error
	switch src, ok := r.sources[name]; {
	case ok:
		if rd, err = src.Open(opts); err != nil {
			return fmt.Errorf("source %s: %w", src.Name, err)
		}
	case name == "-":
		if rd, err = r.stdin.open(opts, r.stdinAgain); err != nil {
			return err
		}
	case r.openFile != nil:
		rg, ok := r.ranges[name]
		if !ok {
			return fmt.Errorf("%s: no document range", name)
		}
		if rd, err = openRange(r.openFile, name, opts, rg); err != nil {
			return err
		}
	default:
		if rd, err = corpus.Open(name, opts); err != nil {
			return err
		}
	}
	jl, _ := rd.(*corpus.JSONL)
	if lines == nil || !opts.RawOnly {
		jl = nil
	}
	n := 0
	for {
		for jl != nil {
			ok, err := lines(jl)
			if err != nil {
				rd.Close()
				return err
			}
			if !ok {
				break
			}
		}
		if !rd.Next() {
			break
		}
		if n++; n%1024 == 0 && ctx.Err() != nil {
			rd.Close()
			return ctx.Err()
		}
		if err := fn(rd.Doc()); err != nil {
			rd.Close()
			return err
		}
	}
	err = rd.Err()
	if cerr := rd.Close(); err == nil {
		err = cerr
	}
	return err
}

// maxPresizedDocs bounds the documents pass1 makes room for ahead, from
// the plan's estimate.
const maxPresizedDocs = 1 << 24

// pass1 reads, sketches in parallel, and feeds the finder in order.
func (r *run) pass1(ctx context.Context) error {
	// Standard input is kept for a second pass when one may come.
	r.stdinAgain = r.out.Kept != "" || r.in.Examples > 0 || r.in.RandomExamples > 0
	r.stats.Memory = r.plan()
	if r.in.OnPlan != nil {
		r.in.OnPlan(r.stats.Memory)
	}
	if err := r.prePass(ctx); err != nil {
		return err
	}
	start := newMark()
	r.in.Progress.Stage("read, sketch, find", r.stats.Memory.EstimatedDocs)
	var finder Finder
	var comp *compFinder // the component join's Finder, when it is the run's
	if r.stats.Memory.Spill {
		sf, err := newSpillFinder(r.caps.keyed, r.out.TmpDir, r.stats.Memory.heapBudget())
		if err != nil {
			return err
		}
		sf.all = r.cfg.AllPairs
		sf.setWorkers(r.cfg.workers())
		if err := sf.expect(r.stats.Memory.EstimatedDocs); err != nil {
			sf.Close()
			return err
		}
		if r.cfg.workers() > 1 && !r.cfg.AllPairs {
			// The spanning pairs come at Flush, on one goroutine: their
			// lines are made on the workers, a few chunks at a time.
			r.pairsLater = r.pairsBuf != nil
			r.pairsHold = 2 * pairChunk * min(r.cfg.workers(), 8) // 2.6-10.5 MB of pairs
			r.reported = make([]Pair, 0, r.pairsHold)
		}
		finder = sf
	} else if r.useComponents() {
		comp = r.caps.components.newCompFinder(r.cfg.workers(), r.out.TmpDir)
		comp.ctx = ctx
		r.pairsLater = r.pairsBuf != nil
		finder = comp
	} else {
		var err error
		if finder, err = r.method.NewFinder(); err != nil {
			return err
		}
	}
	r.finder, r.finderCaps = finder, finderCapabilitiesOf(finder)
	if r.cascade != nil {
		// Its finder knows the first occurrences only, by their own
		// numbers: not the kept documents (a copy may be one).
		r.finderCaps.keptCheck = nil
	}
	if s := r.finderCaps.scratch; s != nil {
		s.useScratch(r.cfg.workers(), r.out.TmpDir)
	}
	if c := r.finderCaps.closer; c != nil {
		r.closers = append(r.closers, c)
	}
	r.uf = cluster.NewUnionFind(0)
	r.waitLines = r.stats.Memory.Spill && r.pairsBuf != nil && len(r.in.AgainstIndexes) > 0 && !r.cfg.AllPairs && r.caps.pairOrder == nil
	if err := r.newCheckers(); err != nil {
		return err
	}
	defer func() { r.checkers, r.normCheckers, r.sketchCheckers = nil, nil, nil }()
	emit := r.emitter(false)
	findEmit := emit // the finder's, with its own numbers
	copyEmit := emit // the cascade's copies'
	if r.cascade != nil {
		// The cascade's copy pairs are written as the copies are read,
		// and the method's pairs after them: at the Flush of the
		// component join and of the spill join, and, from a Finder that
		// reports them as it reads (the streaming one: -j 1 in memory),
		// held until then, so that any -j writes the same file. With an
		// index every -j has the streaming Finder, and its pairs keep
		// their place among the copies' and the index lines; spilled,
		// those lines wait for the spill join's pairs (run.waiting).
		hold := comp == nil && !r.stats.Memory.Spill && len(r.in.AgainstIndexes) == 0 && !r.cfg.AllPairs
		findEmit = r.cascade.emitter(r.emitter(hold))
		if r.waitLines {
			copyEmit = r.waitingEmitter()
		}
	}
	df := r.finderCaps.drop
	drop := func(i int, _ float64) {
		if i >= r.nOld { // an old document is never removed
			if r.dropped == nil {
				r.dropped = map[int32]bool{}
			}
			r.dropped[int32(i)] = true
		}
	}
	// The kept documents' copy pays with more cores: with one worker,
	// reading the input again costs about what writing the copy does;
	// one that only counts (the null device) pays with any.
	null := isNullDevice(r.out.Kept)
	if r.out.Kept != "" && (r.cfg.workers() > 1 || null) && !r.in.Resume && len(r.sources) == 0 && r.in.Examples <= 0 && r.in.RandomExamples <= 0 {
		kc, err := newKeptCopy(r.out.TmpDir, null)
		if err != nil {
			return err
		}
		r.keptCopy = kc
		r.closers = append(r.closers, kc)
	}
	// The collector appends an id a document: growing the slice a step at
	// a time copied it about four times over on that one goroutine.
	// Pages of the estimate not filled are never touched.
	if est := r.stats.Memory.EstimatedDocs; r.ids == nil && est > 0 {
		r.ids = make([]string, 0, min(est, maxPresizedDocs))
	}
	err := r.sketchAll(ctx, func(i int, d *rawDoc, s DocSketch) error {
		if d.old {
			r.nOld++
		}
		r.uf.Grow(i + 1)
		r.ids = append(r.ids, d.id)
		if r.cfg.Keep == cluster.Longest {
			r.lengths = append(r.lengths, int32(d.n))
		}
		var err error
		switch c := r.cascade; {
		case c == nil && df != nil:
			err = df.AddDrop(i, s, emit, drop)
		case c == nil:
			err = finder.Add(i, s, emit)
		default:
			if cp, ok := s.(cascadeCopy); ok {
				copyEmit(Pair{A: cp.of, B: i, Similarity: 1, Distance: r.copyDistance(), Hamming: r.caps.hamming})
				break
			}
			c.orig = append(c.orig, int32(i))
			err = finder.Add(len(c.orig)-1, s, findEmit)
		}
		if err != nil {
			return fmt.Errorf("document %q: %w", d.id, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if ko := r.finderCaps.keepOrder; ko != nil && r.cfg.Keep == cluster.Longest {
		ko.SetKeepLength(r.keepLength())
	}
	if r.in.OnFirstPass != nil {
		r.in.OnFirstPass()
	}
	var line []byte
	for _, p := range r.held {
		line = r.recordPair(line, p)
	}
	r.held = nil
	flushEmit := r.waitingLines(emit)
	if r.cascade != nil {
		flushEmit = r.cascade.emitter(flushEmit)
	}
	if err := finder.Flush(flushEmit); err != nil {
		return err
	}
	r.flushWaiting(len(r.ids))
	if comp != nil {
		r.serial.add("components", comp.serialComp)
		r.serial.add("emit pairs", comp.serialEmit)
	}
	if sf, ok := finder.(*spillFinder); ok {
		parts, _ := sf.serial.report()
		for _, p := range parts {
			r.serial.add(p.Name, time.Duration(p.Seconds*float64(time.Second)))
		}
	}
	if r.pairsLater {
		err := r.writeReported()
		r.reported = nil
		if err != nil {
			return err
		}
	}
	if r.cfg.AllPairs {
		r.writeAllPairs()
	}
	if r.pairsBuf != nil {
		if err := r.pairsBuf.Flush(); err != nil {
			return err
		}
	}
	r.stats.Params = r.method.Facts() // some methods decide at Flush
	if r.cascade != nil {
		r.stats.ExactCopies = r.cascade.copies
	}
	r.stats.Documents = len(r.ids) - r.nOld
	r.stats.DuplicateIDs, r.stats.DuplicateIDsFirst = duplicateIDs(r.ids)
	r.stats.Against = r.nOld
	r.stats.Traditional = int(r.traditional.Load())
	r.stats.HTMLNoMainContent = int(r.noMain.Load())
	r.stats.HTMLLike = int(r.htmlLike.Load())
	var bytes int64
	for _, b := range r.fileBytes {
		bytes += b
	}
	r.stage("read+sketch+find", start, int64(len(r.ids)), bytes)
	if comp != nil {
		r.stats.Phases = append(r.stats.Phases, comp.phases...)
	}
	return nil
}

// copyDistance is the distance of a pair of exact copies: 0 for a
// Hamming method, -1 (none) otherwise.
func (r *run) copyDistance() int { return copyDistance(r.caps.hamming) }

func copyDistance(hamming bool) int {
	if hamming {
		return 0
	}
	return -1
}

// sketchAll reads every document, normalises and sketches it on the
// workers, and calls consume for each in input order on one goroutine. An
// empty document (empty normalised text) gets a nil sketch.
func (r *run) sketchAll(ctx context.Context, consume func(i int, d *rawDoc, s DocSketch) error) error {
	inner := consume
	consume = func(i int, d *rawDoc, s DocSketch) error {
		if !d.old {
			r.noteIDFromPosition(d)
		}
		return inner(i, d, s)
	}
	workers := r.cfg.workers()
	sketchers := make([]DocSketcher, workers)
	for w := range sketchers {
		var err error
		if sketchers[w], err = r.method.NewSketcher(); err != nil {
			return err
		}
	}
	release, err := r.useDevice(sketchers)
	if err != nil {
		return err
	}
	defer release()
	if r.linePrefix != nil {
		for w, sk := range sketchers {
			sketchers[w] = &lineSketcher{inner: sk, prefix: r.linePrefix}
		}
	}
	if r.cascade != nil {
		for w, sk := range sketchers {
			sketchers[w] = &cascadeSketcher{c: r.cascade, inner: sk}
		}
	}
	return r.eachDoc(ctx, sketchers, consume)
}

// prePass runs the method's pre-pass (for example learning TF-IDF
// weights) when it needs one: every document, normalised, to one Learner
// per worker, then FinishPrePass. Checkpoints are not used for it.
func (r *run) prePass(ctx context.Context) error {
	pp := r.caps.prePass
	if pp == nil || !pp.NeedsPrePass() {
		return nil
	}
	start := newMark()
	r.in.Progress.Stage("learn weights", r.stats.Memory.EstimatedDocs)
	learners := make([]Learner, r.cfg.workers())
	workers := make([]DocSketcher, len(learners))
	for w := range learners {
		l, err := pp.NewLearner()
		if err != nil {
			return err
		}
		learners[w] = l
		workers[w] = learnSketcher{l}
	}
	again := r.stdinAgain
	r.stdinAgain = true // the main pass reads it again
	defer func() { r.stdinAgain = again }()
	ckpt, stats := r.ckpt, *r.stats
	skipped, bytes, damaged := slices.Clone(r.fileSkipped), slices.Clone(r.fileBytes), slices.Clone(r.fileDamaged)
	r.ckpt = nil // the pre-pass neither writes nor reads checkpoints
	var docs, read int64
	err := r.eachDoc(ctx, workers, func(int, *rawDoc, DocSketch) error { docs++; return nil })
	for k, b := range r.fileBytes {
		read += b - bytes[k]
	}
	r.ckpt, *r.stats = ckpt, stats // counts belong to the main pass
	copy(r.fileSkipped, skipped)   // (the checkpoint writer holds these slices)
	copy(r.fileBytes, bytes)
	copy(r.fileDamaged, damaged)
	if err != nil {
		return err
	}
	if err := pp.FinishPrePass(learners); err != nil {
		return err
	}
	r.stage("learn weights", start, docs, read)
	return nil
}

// learnSketcher runs a Learner where the pipeline expects a DocSketcher.
type learnSketcher struct{ l Learner }

func (s learnSketcher) Sketch(d *Doc) (DocSketch, error) { return nil, s.l.Learn(d) }

// emitter returns the function finders report pairs to: it joins the
// clusters and writes the pairs file; with hold, the lines of the pairs
// it reports wait in run.held.
func (r *run) emitter(hold bool) func(Pair) {
	var line []byte
	return func(p Pair) {
		if r.cfg.AllPairs {
			r.uf.Union(p.A, p.B)
			if p.B >= r.nOld {
				r.allPairs = append(r.allPairs, p)
			}
			return
		}
		// Spanning: a pair inside a cluster joins nothing (the jaccard
		// join reports every pair; minhash and simhash skip them already).
		if r.uf.Find(p.A) == r.uf.Find(p.B) {
			return
		}
		r.uf.Union(p.A, p.B)
		if p.B < r.nOld { // both old: joins clusters, is not reported
			return
		}
		if hold {
			r.held = append(r.held, p)
			return
		}
		line = r.recordPair(line, p)
	}
}

// waitingLine is a line of the pairs file that waits (run.waiting):
// document doc's copy of document of, or, with of -1, doc's index hit.
type waitingLine struct{ doc, of int32 }

// waitingEmitter is the emitter of a cascade's copies when their lines
// wait (run.waitLines): it joins the clusters as the documents are read
// and queues the line.
func (r *run) waitingEmitter() func(Pair) {
	return func(p Pair) {
		if r.uf.Find(p.A) == r.uf.Find(p.B) {
			return
		}
		r.uf.Union(p.A, p.B)
		if p.B < r.nOld {
			return
		}
		r.waiting = append(r.waiting, waitingLine{doc: int32(p.B), of: int32(p.A)})
	}
}

// waitingLines returns emit, writing before each pair the waiting lines
// of the documents before its later one: the place the streaming Finder
// gives them, after the pairs that a document's Add reports. The spill
// join's pairs come at Flush, ordered by that document.
func (r *run) waitingLines(emit func(Pair)) func(Pair) {
	if !r.waitLines {
		return emit
	}
	return func(p Pair) {
		r.flushWaiting(p.B)
		emit(p)
	}
}

// flushWaiting writes the waiting lines of the documents before document
// end, in input order.
func (r *run) flushWaiting(end int) {
	for len(r.waiting) > 0 && int(r.waiting[0].doc) < end {
		w := r.waiting[0]
		if w.of < 0 {
			r.writeHitLine(int(w.doc), r.indexHits[w.doc])
		} else {
			r.hitLine = r.recordPair(r.hitLine, Pair{A: int(w.of), B: int(w.doc), Similarity: 1, Distance: r.copyDistance(), Hamming: r.caps.hamming})
		}
		r.waiting = r.waiting[1:]
	}
	if len(r.waiting) == 0 {
		r.waiting = nil
	}
}

// recordPair counts a reported pair in the stats and writes its pairs
// line; it returns line, the reused buffer.
func (r *run) recordPair(line []byte, p Pair) []byte {
	r.stats.countPair(p)
	if r.pairsBuf == nil {
		return line
	}
	if r.pairsLater {
		r.reported = append(r.reported, p)
		if r.pairsHold > 0 && len(r.reported) >= r.pairsHold {
			r.writeReported() // a write error surfaces at Flush
		}
		return line
	}
	line = r.appendPairLine(line[:0], p)
	r.pairsBuf.Write(line) // a write error surfaces at Flush
	return line
}

// writeReported writes the lines of the pairs gathered in reported, made
// on the workers in chunks, and empties it.
func (r *run) writeReported() error {
	span := startSerial()
	defer func() { r.serial.add("write pairs", span.stop()) }()
	err := encodeOrdered(r.pairsBuf, len(r.reported), pairChunk, r.cfg.workers(), func(dst []byte, lo, hi int) []byte {
		for _, p := range r.reported[lo:hi] {
			dst = r.appendPairLine(dst, p)
		}
		return dst
	})
	r.reported = r.reported[:0]
	return err
}

// pairChunk is how many lines of the pairs file a worker makes at a time
// (pairsLater).
const pairChunk = 1 << 14

// countPair counts a reported pair in Pairs and the histograms.
func (s *Stats) countPair(p Pair) {
	s.Pairs++
	s.Similarity[min(int(p.Similarity*20), 19)]++
	if p.Distance >= 0 {
		for len(s.Distance) <= p.Distance {
			s.Distance = append(s.Distance, 0)
		}
		s.Distance[p.Distance]++
	}
}

// appendPairLine appends pair p's line of the pairs file to line.
func (r *run) appendPairLine(line []byte, p Pair) []byte {
	return AppendPairLine(line, r.ids[p.A], r.ids[p.B], p.Similarity, p.Distance, p.Hamming)
}

// writeAllPairs reports the pairs of Options.AllPairs in a fixed order:
// ascending by the later document, then the earlier (id2's input
// position, then id1's), each pair once. For a cliquer method that is
// every two members of each cluster; for the others every pair the finder
// verified.
func (r *run) writeAllPairs() {
	var line []byte
	for _, p := range allPairsOf(r.allPairs, r.uf, r.nOld, len(r.ids), r.caps.cliques) {
		line = r.recordPair(line, p)
	}
	r.allPairs = nil
}

// newCheckers makes each worker's checkers of Input.AgainstIndexes (none
// without an index).
func (r *run) newCheckers() error {
	if len(r.in.AgainstIndexes) == 0 {
		return nil
	}
	if r.sameSpecIndexes() {
		r.normCheckers = make([][]func([]byte) (string, float64, bool, error), r.cfg.workers())
		for w := range r.normCheckers {
			for _, ix := range r.in.AgainstIndexes {
				c, err := ix.(NormalizedIndex).NewNormalizedChecker()
				if err != nil {
					return err
				}
				r.normCheckers[w] = append(r.normCheckers[w], c)
			}
		}
		for _, ix := range r.in.AgainstIndexes {
			if _, ok := ix.(SketchIndex); !ok {
				return nil
			}
		}
		r.sketchCheckers = make([][]func(*sketch.Sketch) (string, float64, bool, error), r.cfg.workers())
		for w := range r.sketchCheckers {
			for _, ix := range r.in.AgainstIndexes {
				c, err := ix.(SketchIndex).NewSketchChecker()
				if err != nil {
					return err
				}
				r.sketchCheckers[w] = append(r.sketchCheckers[w], c)
			}
		}
		return nil
	}
	r.checkers = make([][]func(string) (string, float64, bool, error), r.cfg.workers())
	for w := range r.checkers {
		for _, ix := range r.in.AgainstIndexes {
			c, err := ix.NewChecker()
			if err != nil {
				return err
			}
			r.checkers[w] = append(r.checkers[w], c)
		}
	}
	return nil
}

// sameSpecIndexes reports whether every index of Input.AgainstIndexes
// is a NormalizedIndex whose resolved specification is the run's, field
// by field (the normalisation's options included): then the run's
// normalised text is what each index's sketcher would make of the raw
// text.
func (r *run) sameSpecIndexes() bool {
	for _, ix := range r.in.AgainstIndexes {
		n, ok := ix.(NormalizedIndex)
		if !ok || !reflect.DeepEqual(n.Spec(), r.spec) {
			return false
		}
	}
	return true
}

// checkNormalized is check for a normalised text (normCheckers).
func checkNormalized(checkers []func([]byte) (string, float64, bool, error), norm []byte) (*indexHit, error) {
	for _, c := range checkers {
		id, sim, ok, err := c(norm)
		if err != nil {
			return nil, err
		}
		if ok {
			return &indexHit{id, sim}, nil
		}
	}
	return nil, nil
}

// checkSketch is check for a sketch (sketchCheckers).
func checkSketch(checkers []func(*sketch.Sketch) (string, float64, bool, error), sk *sketch.Sketch) (*indexHit, error) {
	for _, c := range checkers {
		id, sim, ok, err := c(sk)
		if err != nil {
			return nil, err
		}
		if ok {
			return &indexHit{id, sim}, nil
		}
	}
	return nil, nil
}

// check looks a text up in every index, in order, and returns the first
// index's best duplicate.
func check(checkers []func(string) (string, float64, bool, error), text string) (*indexHit, error) {
	for _, c := range checkers {
		id, sim, ok, err := c(text)
		if err != nil {
			return nil, err
		}
		if ok {
			return &indexHit{id, sim}, nil
		}
	}
	return nil, nil
}

// indexHit records that new document i duplicates an indexed document,
// and writes the pair.
func (r *run) indexHit(i int, h indexHit) {
	if r.indexHits == nil {
		r.indexHits = map[int32]indexHit{}
	}
	r.indexHits[int32(i)] = h
	r.stats.IndexMatches++
	r.stats.Pairs++
	r.stats.Similarity[min(int(h.sim*20), 19)]++
	if r.pairsBuf == nil {
		return
	}
	if r.waitLines {
		// The spill join reports its pairs at Flush: the line waits
		// there for them (waitingLines).
		r.waiting = append(r.waiting, waitingLine{doc: int32(i), of: -1})
		return
	}
	r.writeHitLine(i, h)
}

// writeHitLine writes the pairs line of document i's hit h in an index,
// after the pairs reported before it.
func (r *run) writeHitLine(i int, h indexHit) {
	if r.pairsLater && len(r.reported) > 0 {
		r.writeReported() // a write error surfaces at Flush
	}
	line := AppendIndexPairLine(r.hitLine[:0], h.id, r.ids[i], h.sim)
	r.pairsBuf.Write(line) // a write error surfaces at Flush
	r.hitLine = line
}

// keepLength is the length by which --keep longest chooses: the text's,
// and an old document always wins (it is never removed).
func (r *run) keepLength() func(int) int {
	return func(i int) int {
		if i < r.nOld {
			return math.MaxInt
		}
		return int(r.lengths[i])
	}
}

// finish chooses the kept documents and writes the outputs.
func (r *run) finish(ctx context.Context) error {
	start := newMark()
	span := startSerial()
	var length func(int) int
	if r.cfg.Keep == cluster.Longest {
		length = r.keepLength()
	}
	// Old documents come first, so under First an old member is kept too.
	keep := cluster.Keep(r.uf, r.cfg.Keep, length)
	r.serial.add("cluster", span.stop())
	// The exact check of the removed documents (a statistic) runs
	// beside the rest of finish and the write stage.
	below := make(chan *int, 1)
	if kc := r.finderCaps.keptCheck; kc != nil {
		go func() {
			var p *int
			if n, ok := kc.CountBelow(keep, r.nOld); ok {
				p = &n
			}
			below <- p
		}()
	} else {
		below <- nil
	}
	belowWaited := false
	defer func() {
		if !belowWaited { // the finder's files must not close under it
			<-below
		}
	}()
	r.finder, r.finderCaps = nil, finderCapabilities{}
	span = startSerial()
	// A cluster with a document found in an index goes: the indexed
	// document is its kept member, as an old corpus's would be.
	r.stats.Dropped = len(r.dropped)
	if len(r.indexHits) > 0 {
		r.labels = map[int32]string{}
		for i := r.nOld; i < len(keep); i++ { // in input order: the earliest hit names it
			if h, ok := r.indexHits[int32(i)]; ok {
				if _, named := r.labels[keep[i]]; !named {
					r.labels[keep[i]] = h.id
				}
			}
		}
		if r.dropped == nil {
			r.dropped = map[int32]bool{}
		}
		for i := r.nOld; i < len(keep); i++ {
			if _, ok := r.labels[keep[i]]; ok {
				r.dropped[int32(i)] = true
			}
		}
	}
	// Cluster sizes by kept document (a slice: a map of a million
	// clusters took a second).
	size := make([]int32, len(keep))
	for i, k := range keep[r.nOld:] {
		if r.kept(keep, i+r.nOld) {
			r.stats.Kept++
		}
		size[k]++
	}

	r.stats.Removed = r.stats.Documents - r.stats.Kept
	bySize := map[int]int{}
	for k, n32 := range size {
		if n32 == 0 {
			continue
		}
		n := int(n32)
		_, labelled := r.labels[int32(k)]
		if n > 1 || k < r.nOld || labelled { // a new document with an old duplicate counts
			r.stats.Clusters++
		}
		r.stats.LargestCluster = max(r.stats.LargestCluster, n)
		bySize[n]++
	}
	for n, c := range bySize {
		r.stats.ClusterSizes = append(r.stats.ClusterSizes, SizeCount{Size: n, Count: c})
	}
	slices.SortFunc(r.stats.ClusterSizes, func(a, b SizeCount) int { return a.Size - b.Size })
	r.serial.add("cluster", span.stop())
	r.stage("cluster", start, int64(len(keep)), 0)

	start = newMark()
	// The clusters file is written while pass 2 writes the kept
	// documents.
	clustersDone := make(chan error, 1)
	if r.out.Clusters != "" {
		f, err := r.create(r.out.Clusters)
		if err != nil {
			return err
		}
		go func() {
			span := startSerial()
			err := r.writeClusters(f, keep)
			r.serial.add("write clusters", span.stop())
			clustersDone <- err
		}()
	} else {
		clustersDone <- nil
	}
	if r.out.OnCluster != nil {
		for i := r.nOld; i < len(keep); i++ {
			r.out.OnCluster(r.ids[i], r.clusterOf(keep, i), r.kept(keep, i))
		}
	}
	clustersWaited := false
	defer func() {
		if !clustersWaited {
			<-clustersDone
		}
	}()
	if r.out.Removed != nil {
		for i := r.nOld; i < len(keep); i++ {
			if !r.kept(keep, i) {
				r.out.Removed(r.ids[i])
			}
		}
	}
	var examples map[int32]*Example
	if r.in.Examples > 0 || r.in.RandomExamples > 0 {
		sizes := make(map[int32]int)
		for k, n := range size {
			if n > 0 {
				sizes[int32(k)] = int(n)
			}
		}
		examples = r.pickExamples(sizes)
	}
	if r.out.Kept != "" || len(examples) > 0 {
		if err := r.pass2(ctx, keep, examples); err != nil {
			return err
		}
	}
	clustersWaited = true
	if err := <-clustersDone; err != nil {
		return err
	}
	belowWaited = true
	r.stats.RemovedBelowThreshold = <-below
	if err := ctx.Err(); err != nil { // interrupted: replace nothing
		return err
	}
	for _, f := range r.outputs {
		if err := f.Commit(); err != nil {
			return err
		}
	}
	r.stage("write", start, r.written.docs, r.written.bytes)
	r.stats.SerialParts, r.stats.SerialSeconds = r.serial.report()
	r.stats.PeakRSSBytes = PeakRSS()
	return nil
}

// writeClusters writes the clusters file: one line a new document, in
// input order, encoded on the workers (encodeOrdered).
func (r *run) writeClusters(f io.Writer, keep []int32) error {
	n := len(keep) - r.nOld
	return encodeOrdered(f, n, clusterChunk, r.cfg.workers(), func(line []byte, lo, hi int) []byte {
		for i := r.nOld + lo; i < r.nOld+hi; i++ {
			k := keep[i]
			label, ok := r.labels[k]
			if !ok {
				label = r.ids[k]
			}
			line = AppendClusterLine(line, r.ids[i], label, r.kept(keep, i))
		}
		return line
	})
}

// clusterChunk is how many lines of the clusters file a worker encodes at
// a time.
const clusterChunk = 1 << 14

// kept reports whether document i is kept: it is its cluster's kept
// document and was not dropped by a DropFinder.
func (r *run) kept(keep []int32, i int) bool {
	return int(keep[i]) == i && !r.dropped[int32(i)]
}

// pickExamples chooses the example clusters, by kept-document index
// (ChooseExamples).
func (r *run) pickExamples(sizes map[int32]int) map[int32]*Example {
	if r.in.Examples <= 0 && r.in.RandomExamples <= 0 {
		return nil
	}
	kept, n := multiSizes(sizes)
	ex := make(map[int32]*Example)
	for _, c := range ChooseExamples(kept, n, r.in.Examples, r.in.RandomExamples) {
		ex[int32(kept[c.Cluster])] = &Example{Kind: c.Kind, Size: c.Size, Index: r.labels[int32(kept[c.Cluster])]}
	}
	return ex
}

// multiSizes lists the clusters of sizes (by kept document) of two or
// more documents as ChooseExamples takes them: their kept documents,
// ascending, and their sizes.
func multiSizes(sizes map[int32]int) (kept []int64, n []int) {
	for k, c := range sizes {
		if c > 1 {
			kept = append(kept, int64(k))
		}
	}
	slices.Sort(kept)
	n = make([]int, len(kept))
	for c, k := range kept {
		n[c] = sizes[int32(k)]
	}
	return kept, n
}

// ChosenExample is an example cluster that ChooseExamples chose: its
// place in the list it was given, its kind ("largest" or "random") and
// size.
type ChosenExample struct {
	Cluster int
	Kind    string
	Size    int
}

// ChooseExamples chooses the example clusters as Run does
// (Input.Examples, Input.RandomExamples) from the clusters of two or more
// new documents, given by their kept documents' positions in the input,
// ascending, and their sizes: the largest ones (ties by position), then
// random others drawn with a fixed seed, so that the choice depends on
// the clusters only. A staged job gives it the clusters that its join
// tasks found, and chooses what Run would. They come in the order of
// Stats.Examples: the largest by size, then the random ones by position.
func ChooseExamples(kept []int64, sizes []int, largest, random int) []ChosenExample {
	if largest <= 0 && random <= 0 {
		return nil
	}
	order := make([]int, len(kept))
	for c := range order {
		order[c] = c
	}
	slices.SortStableFunc(order, func(a, b int) int { return sizes[b] - sizes[a] })
	n := min(max(largest, 0), len(order))
	var out []ChosenExample
	for _, c := range order[:n] {
		out = append(out, ChosenExample{Cluster: c, Kind: "largest", Size: sizes[c]})
	}
	rest := slices.Clone(order[n:])
	slices.Sort(rest) // by position
	rng := rand.New(rand.NewPCG(0x6e656172, 0x64757031))
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	picked := slices.Clone(rest[:min(max(random, 0), len(rest))])
	slices.Sort(picked)
	for _, c := range picked {
		out = append(out, ChosenExample{Cluster: c, Kind: "random", Size: sizes[c]})
	}
	return out
}

// ExampleMembers caps how many members of an example cluster are kept.
const ExampleMembers = 8

// pass2 reads the input again to write the kept documents and to fill in
// the example clusters' texts.
func (r *run) pass2(ctx context.Context, keep []int32, examples map[int32]*Example) error {
	var w corpus.Writer
	if r.out.Kept != "" {
		var err error
		if w, err = corpus.Create(r.out.Kept); err != nil {
			return err
		}
		r.outputs = append(r.outputs, w)
	}
	if kc := r.keptCopy; kc != nil && kc.ok && w != nil && len(examples) == 0 && r.stats.Skipped == 0 && len(r.stats.Damaged) == 0 {
		return r.writeKeptFromCopy(ctx, w, keep)
	}
	span := startSerial() // one stream in, on this goroutine
	defer func() { r.serial.add("write: read again", span.stop()) }()
	r.in.Progress.Stage("write", int64(r.stats.Documents))
	// The first pass validated every record. When it skipped none, JSONL
	// records need not be parsed again: only the examples' are.
	opts := r.in.Options
	opts.RawOnly = r.stats.Skipped == 0 && len(r.stats.Damaged) == 0
	i := r.nOld
	err := r.readAllOpts(ctx, r.in.Files, opts, func(d *corpus.Document) error {
		if r.cfg.KeyField != "" && !opts.RawOnly {
			// The first pass skipped (--skip-invalid) the records
			// without the key; the reader does not know of it.
			if _, err := corpus.Field(d.Raw, r.cfg.KeyField); err != nil {
				return nil
			}
		}
		if (i-r.nOld)%batchSize == batchSize-1 {
			r.in.Progress.Advance(batchSize, 0)
		}
		if i >= len(keep) {
			return errors.New("input changed while it was being read")
		}
		r.written.docs++
		r.written.bytes += int64(len(d.Raw))
		k := keep[i]
		if ex := examples[k]; ex != nil && (int(k) == i || len(ex.Members) < ExampleMembers-1) {
			// RawOnly leaves a JSONL record's id empty; no reader gives
			// an empty id otherwise.
			if opts.RawOnly && d.ID == "" {
				if err := corpus.ParseJSONL(d, opts); err != nil {
					return &corpus.RecordError{File: d.Source, Record: d.Record, Offset: d.Offset, ID: d.ID, Err: err}
				}
			}
			m := ExampleDoc{ID: d.ID, Text: d.Text, Kept: r.kept(keep, i)}
			if r.spec.Normalize.HTML {
				// A strings.Reader never fails, so neither does the extraction.
				b, _, _ := text.ExtractHTML(nil, strings.NewReader(d.Text), r.spec.Normalize.HTMLAll)
				m.Text = string(b)
			}
			if m.Kept { // the kept document goes first
				ex.Members = slices.Insert(ex.Members, 0, m)
			} else {
				ex.Members = append(ex.Members, m)
			}
		}
		i++
		if w != nil && r.kept(keep, i-1) {
			return w.Write(d)
		}
		return nil
	}, nil)
	if err != nil {
		return err
	}
	if i != len(keep) {
		return errors.New("input changed while it was being read")
	}
	if rest := (i - r.nOld) % batchSize; rest > 0 { // the last, partial batch
		r.in.Progress.Advance(rest, 0)
	}
	roots := make([]int32, 0, len(examples))
	for k := range examples {
		roots = append(roots, k)
	}
	slices.SortFunc(roots, func(a, b int32) int {
		ea, eb := examples[a], examples[b]
		if ea.Kind != eb.Kind {
			return strings.Compare(ea.Kind, eb.Kind) // "largest" before "random"
		}
		if ea.Kind == "largest" && ea.Size != eb.Size {
			return eb.Size - ea.Size
		}
		return int(a - b)
	})
	for _, k := range roots {
		r.stats.Examples = append(r.stats.Examples, *examples[k])
	}
	return nil
}

// noteIDFromPosition counts d in Stats.IDsFromPosition when its id is
// its own FILE:LINE, the id a reader gives a record without one (called
// in input order, on the collector's goroutine).
// readsLines is corpus.ReadsLines of input file k (r.sequence[k]), worked
// out once a file: noteIDFromPosition asks it of every line of a plain
// text file, on the goroutine that consumes the documents in order.
func (r *run) readsLines(k int) bool {
	if len(r.linesFiles) < len(r.sequence) {
		r.linesFiles = append(r.linesFiles, make([]int8, len(r.sequence)-len(r.linesFiles))...)
	}
	if r.linesFiles[k] == 0 {
		r.linesFiles[k] = -1
		if corpus.ReadsLines(r.sequence[k], r.in.Options) {
			r.linesFiles[k] = 1
		}
	}
	return r.linesFiles[k] > 0
}

func (r *run) noteIDFromPosition(d *rawDoc) {
	name := r.sequence[d.file]
	if len(d.id) < len(name)+2 || d.id[len(name)] != ':' || !strings.HasPrefix(d.id, name) {
		return
	}
	if n, err := strconv.ParseInt(d.id[len(name)+1:], 10, 64); err != nil || n != d.record {
		return
	}
	// A line of plain text has no id to lack: --id-field only names the
	// key of its record's id.
	if r.readsLines(d.file) {
		return
	}
	if r.stats.IDsFromPosition == 0 {
		r.stats.IDsFromPositionFirst = d.id
	}
	r.stats.IDsFromPosition++
}
