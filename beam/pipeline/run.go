// Package pipeline is neardup's batch job as an Apache Beam pipeline (Go
// SDK): the same documents, sketches, bucket keys and pair decisions as
// `neardup dedup` (package dedup's methods), with the candidate pairs
// found by GroupByKey on bucket keys and the clusters computed in the
// pipeline by connected components (cc.go), so that it runs on Prism,
// Flink, Spark or Dataflow. docs/beam.md describes the stages.
//
// A run is a sequence of Beam jobs (a pipeline graph has no loops). It
// is `neardup dedup --executor`'s staged design (internal/staged): keys
// with document numbers only, components, then each document's sketch
// sent once, to its component's join:
//
//  1. read, sketch, candidate edges: read every input file, normalise
//     and sketch each document (dedup.Signer), group the (key, rank)
//     pairs (in shards), and write the candidate graph's edges (a star
//     from each bucket's lowest rank) and the documents' metadata;
//  2. components, repeated: Options.RoundsPerJob rounds of large-star /
//     small-star on the edges, until a round changes nothing;
//  3. join and outputs: the documents of the components, grouped by
//     input file, are read and sketched again and each one's sketch sent
//     to its component (once), where dedup.JoinComponents joins it (the
//     Finder of `neardup dedup`); then the clusters lines, the kept
//     records (a second read of the input files) and the pairs.
//
// Intermediate files go to OUTPUT/_tmp-RUNID and the outputs are moved into
// OUTPUT only when every job has succeeded.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/human"
)

// ErrUsage is wrapped by errors in the options (exit code 2 of the
// command).
var ErrUsage = errors.New("usage")

// Options configure a run.
type Options struct {
	// Inputs are file names or globs, read through Beam's file systems
	// (local paths, gs://, s3://).
	Inputs []string
	// Output is the output directory.
	Output string
	// Config is the method and its parameters, as `neardup dedup` takes
	// them (the zero dedup.Options, then the flags). Workers, Memory and
	// Spill do not apply.
	Config dedup.Options
	// TextField, IDField and MaxDocBytes configure the readers (package
	// corpus; zero values are its defaults).
	TextField, IDField string
	MaxDocBytes        int
	// StreamFormat is the format of the input files whose names give
	// none (data.zst, corpus.data): corpus.StreamJSONL or
	// corpus.StreamText (one document a line), as `neardup dedup
	// --format` reads them; "" refuses such a name. Files whose names
	// give a format go by it.
	StreamFormat string
	// SkipInvalid skips bad records (counted in Stats.Skipped, the
	// first in Stats.SkippedErrors) instead of failing the run, as
	// `neardup dedup --skip-invalid` does; a damaged gzip or zstd stream
	// still fails it (readOptions.corpus). A run that skips every record
	// fails with ErrInvalidData.
	SkipInvalid bool
	// Pairs writes pairs-*.jsonl.
	Pairs bool
	// Runner is the Beam runner: prism (in-process), universal, flink,
	// spark or dataflow (the last ones need their flags: see the README).
	Runner string
	// JoinDocs is about how many documents with a candidate one join
	// holds (0: JoinShardDocs); tests make it small to run many joins.
	JoinDocs int64
	// JoinMemory is about how many bytes of documents (ids and sketches)
	// one join holds in memory (0: DefaultJoinMemory; negative: no
	// limit). A join of more (a giant component) writes its sketches to
	// a local scratch file (the worker's os.TempDir) and is joined with
	// them streamed from it, holding the method's index and the
	// documents' ids but not their sketches. A join that needs more
	// than JoinMemory even so (a component whose ids and index entries
	// alone are more) fails with ErrJoinTooLarge.
	JoinMemory int64
	// RoundsPerJob is how many connected-components rounds one job runs
	// (0: 4); MaxRounds stops a run that has not converged (0: 200).
	RoundsPerJob, MaxRounds int
	// Log, when set, is told about each job.
	Log func(format string, args ...any)
}

// JoinShardDocs is about how many documents with a candidate one join
// holds (whole components: a larger one is joined alone): the components
// are spread over that many joins by a hash of their center, each one
// call of dedup.JoinComponents, which builds the method and its Finder
// (a join a component cost 2,920 of them on 20,000 bench documents).
const JoinShardDocs = 4096

// DefaultJoinMemory is Options.JoinMemory's default: 256 MiB of
// documents (about 140,000 of the bench corpus, 1.8 KB each with
// minhash's defaults; a join of 4,096 documents holds about 8 MB), which
// dedup.JoinComponents holds about one and a half times at its peak (it
// copies the shingle sets as it frees the sketches).
const DefaultJoinMemory = 256 << 20

// Stage is the time one job took.
type Stage struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Stats summarises a run; it is written to OUTPUT/stats.json.
type Stats struct {
	Runner         string      `json:"runner"`
	Method         string      `json:"method"`
	Params         dedup.Facts `json:"params"`
	Keep           string      `json:"keep"`
	Files          int         `json:"files"`
	Documents      int64       `json:"documents"`
	Empty          int64       `json:"empty_documents"`
	InputBytes     int64       `json:"input_bytes"`
	Kept           int64       `json:"kept"`
	Removed        int64       `json:"removed"`
	Clusters       int64       `json:"clusters"` // components with more than one document
	LargestCluster int64       `json:"largest_cluster"`
	Pairs          int64       `json:"pairs"`
	CandidateEdges int64       `json:"candidate_edges"`
	LargestBucket  int64       `json:"largest_bucket"`
	// JoinShards is how many joins the components were spread over
	// (JoinShardDocs documents with a candidate each, about), LargestJoin
	// the most documents one of them held.
	JoinShards  int64 `json:"join_shards"`
	LargestJoin int64 `json:"largest_join"`
	// StreamedJoins is how many joins held more than Options.JoinMemory
	// and were joined with their sketches streamed from a scratch file;
	// StreamedDocs their documents.
	StreamedJoins int64   `json:"streamed_joins"`
	StreamedDocs  int64   `json:"streamed_documents"`
	Rounds        int     `json:"cc_rounds"`
	Jobs          int     `json:"jobs"`
	ShuffleBytes  int64   `json:"shuffle_bytes"`
	ShufflePerDoc float64 `json:"shuffle_bytes_per_document"`
	// ShuffleBySteps is ShuffleBytes per step: keys, components (the
	// candidate edges' repeats removed, then all rounds), components_by_file,
	// sketches_to_components.
	ShuffleBySteps map[string]int64 `json:"shuffle_bytes_by_step"`
	// Resketched is how many documents had a candidate and were sketched
	// again on the second read of their file, for their component's
	// join.
	Resketched int64 `json:"sketched_again"`
	// Cascade says that the method ran after an exact stage
	// (dedup.Options.Cascade, --method cascade): ExactCopies documents
	// were joined with their first occurrence as identical after
	// normalisation (dedup.Stats.ExactCopies), FileCopies of them
	// found in their own file before the method sketched them (the
	// others, copies of a document of another file, were sketched).
	// Texts is the cascade's distinct texts with a sketch: the near
	// method's documents (Documents - Empty - ExactCopies).
	Cascade     bool  `json:"cascade,omitempty"`
	Texts       int64 `json:"distinct_texts,omitempty"`
	ExactCopies int64 `json:"exact_copies,omitempty"`
	FileCopies  int64 `json:"file_copies,omitempty"`
	// DuplicateIDs counts the ids that more than one document has (each
	// such id once), DuplicateIDsFirst the first few in the order of
	// their second document: `neardup dedup --stats`'s fields
	// (dedup.Stats), which the outputs, naming documents by id, cannot
	// tell apart.
	DuplicateIDs int64 `json:"duplicate_ids,omitempty"`
	// Skipped counts the bad records skipped (Options.SkipInvalid),
	// SkippedErrors holds the first dedup.MaxSkippedErrors of them in
	// input order: `neardup dedup --stats`'s fields.
	Skipped           int64    `json:"skipped"`
	SkippedErrors     []string `json:"skipped_errors,omitempty"`
	DuplicateIDsFirst []string `json:"duplicate_ids_first,omitempty"`
	Stages            []Stage  `json:"stages"`
	Seconds           float64  `json:"seconds"`
}

type run struct {
	opts  Options
	files []string
	tmp   string
	read  readOptions
	stats Stats
}

// Run runs the pipeline and returns its statistics.
func Run(ctx context.Context, opts Options) (*Stats, error) {
	start := time.Now()
	if opts.Output == "" {
		return nil, fmt.Errorf("%w: no --output", ErrUsage)
	}
	if opts.Runner == "" {
		opts.Runner = "prism"
	}
	if opts.JoinDocs <= 0 {
		opts.JoinDocs = JoinShardDocs
	}
	if opts.JoinMemory == 0 {
		opts.JoinMemory = DefaultJoinMemory
	}
	if opts.RoundsPerJob <= 0 {
		opts.RoundsPerJob = 4
	}
	if opts.MaxRounds <= 0 {
		opts.MaxRounds = 200
	}
	if err := checkConfig(opts.Config); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	read, err := readOptionsOf(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	files, err := expandInputs(ctx, opts.Inputs, opts.StreamFormat)
	if err != nil {
		return nil, err
	}
	out := strings.TrimSuffix(opts.Output, "/")
	r := &run{opts: opts, files: files,
		tmp:  fmt.Sprintf("%s/_tmp-%s-%08x", out, time.Now().UTC().Format("20060102T150405"), rand.Uint32()),
		read: read}
	m, _ := dedup.NewMethod(opts.Config)
	r.stats = Stats{Runner: opts.Runner, Method: opts.Config.Method, Params: m.Facts(), Keep: opts.Config.Keep.String(), Files: len(files), Cascade: opts.Config.Cascade}
	defer r.removeTmp(context.WithoutCancel(ctx))
	if err := r.sketchJob(ctx); err != nil {
		return nil, err
	}
	edges, err := r.components(ctx, r.tmp+"/edges-000")
	if err != nil {
		return nil, err
	}
	if err := r.outputJob(ctx, edges); err != nil {
		return nil, err
	}
	r.stats.Removed = r.stats.Documents - r.stats.Kept
	if r.stats.Documents > 0 {
		r.stats.ShufflePerDoc = float64(r.stats.ShuffleBytes) / float64(r.stats.Documents)
	}
	r.stats.Seconds = time.Since(start).Seconds()
	if err := r.commit(ctx, out); err != nil {
		return nil, err
	}
	return &r.stats, nil
}

// components runs the connected-components jobs on the edge files in dir
// (part-*) until a round changes nothing, and returns the directory of the
// final edges: a star from each component's lowest rank to every other
// member. A job that sees no edge has no change counters: a fixpoint too.
func (r *run) components(ctx context.Context, dir string) (string, error) {
	edges := dir
	for round := 0; ; {
		if round >= r.opts.MaxRounds {
			return "", fmt.Errorf("connected components: no fixpoint after %d rounds (--max-rounds)", round)
		}
		n := min(r.opts.RoundsPerJob, r.opts.MaxRounds-round)
		next := fmt.Sprintf("%s/edges-%03d", r.tmp, round+n)
		res, err := r.job(ctx, fmt.Sprintf("components rounds %d-%d", round+1, round+n), func(s beam.Scope) {
			in := beam.ParDo(s, parseEdgeFn, textio.Read(s, edges+"/part-*"))
			writeShards(s, &writeShardsFn{Dir: next, Prefix: "part"}, beam.ParDo(s, edgeLineFn, ccRounds(s, in, round+1, n)))
		})
		if err != nil {
			return "", err
		}
		if err := r.ensureFile(ctx, next+"/part-empty"); err != nil {
			return "", err
		}
		edges = next
		for k := round + 1; k <= round+n; k++ {
			if res[changeCounter(k, "large")]+res[changeCounter(k, "small")] == 0 {
				r.stats.Rounds = k
				return edges, nil
			}
		}
		round += n
		r.stats.Rounds = round
	}
}

// job builds and runs one pipeline and returns its counters (summed over
// steps) and the maxima of its distributions (under "max:NAME").
func (r *run) job(ctx context.Context, name string, build func(s beam.Scope)) (map[string]int64, error) {
	p, s := beam.NewPipelineWithRoot()
	build(s)
	t := time.Now()
	if r.opts.Log != nil {
		r.opts.Log("job %q on %s", name, r.opts.Runner)
	}
	res, err := beam.Run(ctx, r.opts.Runner, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, classify(err))
	}
	r.stats.Jobs++
	r.stats.Stages = append(r.stats.Stages, Stage{Name: name, Seconds: time.Since(t).Seconds()})
	out := map[string]int64{}
	if res == nil {
		return out, nil
	}
	q := res.Metrics().Query(func(sr metrics.SingleResult) bool { return sr.Namespace() == "neardup" })
	for _, c := range q.Counters() {
		out[c.Key.Name] += c.Result()
	}
	for _, d := range q.Distributions() {
		k := "max:" + d.Key.Name
		out[k] = max(out[k], d.Result().Max)
	}
	for k, v := range out {
		if step, ok := strings.CutPrefix(k, shufflePrefix); ok && v != 0 {
			r.stats.ShuffleBytes += v
			if r.stats.ShuffleBySteps == nil {
				r.stats.ShuffleBySteps = map[string]int64{}
			}
			r.stats.ShuffleBySteps[step] += v
		}
	}
	return out, nil
}

// sketchJob is job 1: read, sketch, candidate edges.
func (r *run) sketchJob(ctx context.Context) error {
	cfg := r.opts.Config
	res, err := r.job(ctx, "read, sketch, candidate edges", func(s beam.Scope) {
		tasks := make([]fileTask, len(r.files))
		for i, f := range r.files {
			tasks[i] = fileTask{Index: int64(i), Path: f}
		}
		files := beam.Reshuffle(s, beam.CreateList(s, tasks))
		meta, keys := beam.ParDo2(s, &readFn{Cfg: cfg, Read: r.read, SkippedDir: r.tmp + skippedDir}, files)
		writeShards(s, &writeShardsFn{Dir: r.tmp + "/meta", Prefix: "part"}, beam.ParDo(s, metaLineFn, meta))
		duplicateIDs(s, meta, r.tmp+dupIDsFile)
		edges := beam.ParDo(s, bucketEdgesFn, beam.CombinePerKey(s, &packKeysFn{}, keys))
		edges = distinctEdges(s.Scope("candidates"), edges)
		writeShards(s, &writeShardsFn{Dir: r.tmp + "/edges-000", Prefix: "part"}, beam.ParDo(s, edgeLineFn, edges))
	})
	if err != nil {
		return err
	}
	r.stats.Documents = res["documents"]
	r.stats.Empty = res["empty"]
	r.stats.InputBytes = res["input_bytes"]
	r.stats.CandidateEdges = res["candidate_edges"]
	r.stats.LargestBucket = res["max:bucket_size"]
	r.stats.FileCopies = res["file_copies"]
	r.stats.Texts = res["cascade_texts"]
	r.stats.Skipped = res["skipped"]
	if r.stats.Skipped > 0 {
		if err := r.readSkipped(ctx); err != nil {
			return err
		}
		if r.stats.Documents == 0 {
			return fmt.Errorf("%w: every record (%s) was invalid and skipped by --skip-invalid: no document was read; the first: %s", ErrInvalidData, human.Number(r.stats.Skipped), r.stats.SkippedErrors[0])
		}
	}
	r.stats.DuplicateIDs = res["duplicate_ids"]
	if r.stats.DuplicateIDs > 0 {
		if r.stats.DuplicateIDsFirst, err = readStrings(ctx, r.tmp+dupIDsFile); err != nil {
			return err
		}
	}
	// An empty edge set writes no file: give the next job one to read.
	return r.ensureFile(ctx, r.tmp+"/edges-000/part-empty")
}

// skippedDir is where readFn writes the first bad records it skipped in
// a file (FILEINDEX.json: a list of their errors).
const skippedDir = "/skipped"

// readSkipped sets Stats.SkippedErrors: the first of each file's, in
// file order.
func (r *run) readSkipped(ctx context.Context) error {
	fs, err := filesystem.New(ctx, r.tmp+skippedDir)
	if err != nil {
		return err
	}
	names, err := fs.List(ctx, r.tmp+skippedDir+"/*.json")
	fs.Close()
	if err != nil {
		return err
	}
	slices.Sort(names) // FILEINDEX, zero-padded
	for _, n := range names {
		errs, err := readStrings(ctx, n)
		if err != nil {
			return err
		}
		r.stats.SkippedErrors = append(r.stats.SkippedErrors, errs...)
		if len(r.stats.SkippedErrors) >= dedup.MaxSkippedErrors {
			r.stats.SkippedErrors = r.stats.SkippedErrors[:dedup.MaxSkippedErrors]
			break
		}
	}
	return nil
}

// outputJob is the last job: the components' joins, the clusters, the
// kept records, the pairs.
func (r *run) outputJob(ctx context.Context, edges string) error {
	final := r.tmp + "/final"
	sketched := r.stats.Documents - r.stats.Empty
	if r.opts.Config.Cascade {
		sketched = r.stats.Texts
	}
	join := &joinFn{Cfg: r.opts.Config, Sketched: sketched, Ranks: int64(len(r.files)) << 40, Pairs: r.opts.Pairs, Memory: r.opts.JoinMemory}
	// Documents with a candidate: at most two a candidate edge.
	r.stats.JoinShards = min(max(min(2*r.stats.CandidateEdges, r.stats.Documents)/r.opts.JoinDocs, 1), 1<<20)
	res, err := r.job(ctx, "join components, outputs", func(s beam.Scope) {
		meta := beam.ParDo(s, parseMetaFn, textio.Read(s, r.tmp+"/meta/part-*"))
		labels := beam.CombinePerKey(s, minFn, beam.ParDo(s, labelOfEdgeFn, beam.ParDo(s, parseEdgeFn, textio.Read(s, edges+"/part-*"))))
		byFile := beam.GroupByKey(s, beam.ParDo(s, byFileFn, labels))
		byComp := beam.GroupByKey(s, beam.ParDo(s, &signAgainFn{Cfg: r.opts.Config, Read: r.read, Files: r.files, Shards: r.stats.JoinShards}, byFile))
		removed, pairs := beam.ParDo2(s, join, byComp)
		lines, kept := beam.ParDo2(s, clusterLinesFn, beam.CoGroupByKey(s, meta, removed))
		writeShards(s, &writeShardsFn{Dir: final, Prefix: "clusters", Suffix: ".jsonl", Sort: true, ByFile: true}, lines)
		beam.ParDo0(s, &keptRecordsFn{Dir: final, Read: r.read, Files: r.files}, beam.GroupByKey(s, kept))
		if r.opts.Pairs {
			writeShards(s, &writeShardsFn{Dir: final, Prefix: "pairs", Suffix: ".jsonl", Sort: true, ByFile: true}, pairs)
		}
	})
	if err != nil {
		return err
	}
	r.stats.Kept = res["kept"]
	r.stats.Clusters = res["clusters"]
	r.stats.LargestCluster = max(res["max:cluster_size"], min(r.stats.Documents, 1))
	r.stats.LargestJoin = res["max:join_size"]
	r.stats.StreamedJoins = res["streamed_joins"]
	r.stats.StreamedDocs = res["streamed_documents"]
	r.stats.Pairs = res["pairs"]
	r.stats.Resketched = res["sketched_again"]
	r.stats.ExactCopies = res["exact_copies"]
	return nil
}

// ensureFile creates an empty file at path, so that a glob of its
// directory matches even when a job wrote no shard.
func (r *run) ensureFile(ctx context.Context, path string) error {
	w, err := createFile(ctx, path)
	if err != nil {
		return err
	}
	return w.Close()
}

// commit moves the outputs into the output directory (replacing the
// clusters, kept and pairs files of an earlier run) and writes
// stats.json.
func (r *run) commit(ctx context.Context, out string) error {
	fs, err := filesystem.New(ctx, out)
	if err != nil {
		return err
	}
	defer fs.Close()
	for _, pat := range []string{"clusters-*.jsonl", "kept-*.jsonl.zst", "pairs-*.jsonl"} {
		old, err := fs.List(ctx, out+"/"+pat)
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := remove(ctx, fs, f); err != nil {
				return err
			}
		}
	}
	names, err := fs.List(ctx, r.tmp+"/final/*")
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, f := range names {
		if err := move(ctx, fs, f, out+"/"+f[strings.LastIndex(f, "/")+1:]); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(&r.stats, "", "  ")
	if err != nil {
		return err
	}
	w, err := createFile(ctx, r.tmp+"/stats.json")
	if err != nil {
		return err
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		w.abort()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return move(ctx, fs, r.tmp+"/stats.json", out+"/stats.json")
}

func move(ctx context.Context, fs filesystem.Interface, from, to string) error {
	if rn, ok := fs.(filesystem.Renamer); ok {
		return rn.Rename(ctx, from, to)
	}
	cp, ok1 := fs.(filesystem.Copier)
	if !ok1 {
		return fmt.Errorf("%s: the file system can neither rename nor copy", to)
	}
	if err := cp.Copy(ctx, from, to); err != nil {
		return err
	}
	return remove(ctx, fs, from)
}

func remove(ctx context.Context, fs filesystem.Interface, f string) error {
	rm, ok := fs.(filesystem.Remover)
	if !ok {
		return fmt.Errorf("%s: the file system cannot remove files", f)
	}
	return rm.Remove(ctx, f)
}

// removeTmp removes the intermediate files.
func (r *run) removeTmp(ctx context.Context) {
	fs, err := filesystem.New(ctx, r.tmp)
	if err != nil {
		return
	}
	defer fs.Close()
	for _, pat := range []string{"/*", "/*/*"} {
		names, _ := fs.List(ctx, r.tmp+pat)
		for _, n := range names {
			remove(ctx, fs, n)
		}
	}
	// Directories: the local file system removes empty ones by name.
	names, _ := fs.List(ctx, r.tmp+"/*")
	for _, n := range names {
		remove(ctx, fs, n)
	}
	remove(ctx, fs, r.tmp)
}

func init() {
	for _, t := range []any{fileTask{}, docMeta{}, rankComp{}, joinRec{}, keyPairs{}, line{}, readOptions{}, twoRanks{}, dupID{}, dupList{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	// Generated callers instead of reflection (several times faster per
	// element).
	register.DoFn4x1[context.Context, fileTask, func(docMeta), func(int64, keyPairs), error](&readFn{})
	register.Combiner1[keyPairs](&packKeysFn{})
	register.Function4x1(bucketEdgesFn)
	register.Function3x0(labelOfEdgeFn)
	register.Function4x0(byFileFn)
	register.DoFn4x1[context.Context, int64, func(*rankComp) bool, func(int64, joinRec), error](&signAgainFn{})
	register.DoFn5x1[context.Context, int64, func(*joinRec) bool, func(int64, string), func(int64, line), error](&joinFn{})
	register.Function6x1(clusterLinesFn)
	register.DoFn5x1[context.Context, int64, func(*int64) bool, func(*int64) bool, func(int64, int64), error](&largeStarFn{})
	register.DoFn5x1[context.Context, int64, func(*int64) bool, func(*int64) bool, func(int64, int64), error](&smallStarFn{})
	register.DoFn3x1[context.Context, int64, func(*line) bool, error](&writeShardsFn{})
	register.DoFn3x1[context.Context, int64, func(*int64) bool, error](&keptRecordsFn{})
	register.Function4x0(bothDirsFn)
	register.Function4x0(byHigherFn)
	register.Function4x0(edgeKeyFn)
	register.Function2x1(orFn)
	register.Function2x1(minFn)
	register.Function3x0(edgeUnkeyFn)
	register.Function3x0(edgeLineFn)
	register.Function2x1(parseEdgeFn)
	register.Function2x0(metaLineFn)
	register.Function3x0(idRankFn)
	register.Function2x1(firstTwoFn)
	register.Function4x0(dupIDFn)
	register.Function2x1(mergeDupListsFn)
	register.DoFn2x1[context.Context, dupList, error](&writeDupIDsFn{})
	register.Emitter2[string, twoRanks]()
	register.Emitter1[dupList]()
	register.Function2x1(parseMetaFn)
	register.Emitter1[docMeta]()
	register.Emitter2[int64, keyPairs]()
	register.Emitter2[int64, int64]()
	register.Emitter2[string, bool]()
	register.Emitter2[int64, line]()
	register.Emitter2[int64, docMeta]()
	register.Emitter2[int64, rankComp]()
	register.Emitter2[int64, joinRec]()
	register.Emitter2[int64, string]()
	register.Iter1[int64]()
	register.Iter1[line]()
	register.Iter1[string]()
	register.Iter1[docMeta]()
	register.Iter1[rankComp]()
	register.Iter1[joinRec]()
}
