// Package staged runs `neardup dedup` as stages of independent tasks
// ("task i of N") that exchange files in a work folder (a local or shared
// folder, or an object-storage prefix through package internal/objstore):
// neardup dedup --executor and neardup task. docs/scale.md ("Staged
// tasks") describes the stages and their files.
//
// Every task reads its parameters from the plan in the work folder, writes
// each output whole (objstore.Folder.Put), then its completion marker;
// a task whose marker exists does nothing, so a task may run twice, or a
// whole job again after a crash, and leave the same files.
package staged

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/objstore"
)

// PlanName is the plan's file in the work folder.
const PlanName = "plan.json"

// StatsName is the finish task's file in the work folder: the job's
// counts as --stats has them (Job.Stats).
const StatsName = "finish/stats.json"

// PlanVersion changes when the files of the stages change (2: the staged
// sketch is the component join's record; plans may cut by file sizes; 3:
// the components and scatter files carry each document's component; 4:
// sign writes its ids partitioned by hash and may spill several runs of
// each partition, bucket counts the duplicate ids; 5: --skip-invalid and
// --against: the sign metas count skipped and old documents, the join
// stats count the clusters; 6: sign, scatter and join write one pack a
// task (a run), every consumer's section in it, instead of one file a
// consumer: see pack.go; finish writes its counts to the work folder,
// finish/stats.json, for the command's summary; 7: sign keeps no
// sketches that carry shingle sets, the scatter sketches the documents of
// components again from the input; 8: a sign task's last run is run 0,
// its pack's last section the shard's counts, which the bucket tasks
// read instead of the sign metas: see signCounts; 9: a range inside a
// file may start at a restart point, DocRange.From; 10: the sign metas
// count the documents without an --id-field, and finish writes their sum
// to finish/ids_from_position.json for the command's warning; 11: with
// --report, a stage of one task between join and write, examples, reads
// the join tasks' lists of clusters once and writes the chosen examples
// to examples/chosen.json, which the write tasks and finish read: each
// write task read the N lists, N^2 reads a job; the write tasks' parts
// of the report no longer carry the choice; 12: --method cascade: a
// cascade's staged sketch begins with the document's content id and its
// first key is the content id's, the sign metas count the copies within
// the shard, the join stats the exact copies; 13: --against INDEX: the
// plan's indexes, the sign tasks' hits, sign/i/hits; 14: each range
// records its file's version, DocRange.Version, which the tasks check:
// an input written again with the same size is refused).
const PlanVersion = 14

// Stage names, in order.
const (
	StageSign       = "sign"
	StageBucket     = "bucket"
	StageComponents = "components"
	StageScatter    = "scatter"
	StageJoin       = "join"
	StageExamples   = "examples"
	StageWrite      = "write"
	StageFinish     = "finish"
)

// StageNames lists the stages in the order they run.
// A plan may have no task in a stage (examples, without --report):
// Plan.Stages lists those it has.
var StageNames = []string{StageSign, StageBucket, StageComponents, StageScatter, StageJoin, StageExamples, StageWrite, StageFinish}

// InputOptions are the reader options of the plan (corpus.Options without
// its callback) and --skip-invalid.
type InputOptions struct {
	TextField    string `json:"text_field"`
	IDField      string `json:"id_field"`
	MaxDocBytes  int    `json:"max_doc_bytes"`
	StreamFormat string `json:"stream_format,omitempty"`
	// SkipInvalid is dedup.Input.SkipInvalid: the sign tasks skip and
	// count the bad records (their metas list the first few and the
	// damaged files), the write tasks leave them out, finish adds them up.
	SkipInvalid bool `json:"skip_invalid,omitempty"`
}

func (o InputOptions) corpus() corpus.Options {
	return corpus.Options{TextField: o.TextField, IDField: o.IDField, MaxDocBytes: o.MaxDocBytes, StreamFormat: o.StreamFormat}
}

// Plan is the job: written once by `neardup dedup --executor` into the
// work folder, read by every task.
type Plan struct {
	Version int           `json:"version"`
	Tasks   int           `json:"tasks"`
	Options dedup.Options `json:"options"`
	// Params are Stats.Params (from the options as given).
	Params dedup.Facts  `json:"params"`
	Input  InputOptions `json:"input"`
	// Shards are the documents of each input shard, in input order:
	// concatenated, the whole input.
	Shards [][]dedup.DocRange `json:"shards"`
	// Documents is the input's documents as counted when planning, or -1
	// when the plan cut the input by file sizes without counting (the
	// sign tasks' metas count them).
	Documents int64 `json:"documents"`
	// Outputs: folders (Kept, Clusters, Pairs) and a file (Stats); ""
	// for none.
	Kept     string `json:"kept,omitempty"`
	Clusters string `json:"clusters,omitempty"`
	Pairs    string `json:"pairs,omitempty"`
	Stats    string `json:"stats,omitempty"`
	// TaskMemory is every task's memory budget in bytes, TaskWorkers the
	// goroutines a task sketches or joins with.
	TaskMemory  int64 `json:"task_memory"`
	TaskWorkers int   `json:"task_workers"`
	// SpillMemory, when not 0, is the bytes a task holds before it spills
	// (sign: another sorted run; bucket: its edges to a scratch file;
	// scatter and join: to their scratch files) instead of its share of
	// TaskMemory (the hidden --task-spill, for tests).
	SpillMemory int64 `json:"spill_memory,omitempty"`
	// Examples and RandomExamples are dedup.Input's, for the report
	// (--report): the join tasks list their clusters (joinClusters), the
	// examples task chooses the examples as dedup.Run does (ExamplesName),
	// the write tasks read their members' texts and the removed ids,
	// finish gathers them (ReportName). 0 and 0: no report, and no
	// examples task.
	Examples       int `json:"examples,omitempty"`
	RandomExamples int `json:"random_examples,omitempty"`
	// Indexes are the saved indexes of --against (plan version 13): the
	// sign tasks look the new documents up in them (signHits), the joins
	// and the write tasks remove the clusters of those found, as dedup
	// does.
	Indexes []IndexRef `json:"indexes,omitempty"`
}

// examples reports whether the job gathers what its report shows.
func (p *Plan) examples() bool { return p.Examples > 0 || p.RandomExamples > 0 }

// TaskCount is how many tasks stage has.
func (p *Plan) TaskCount(stage string) int {
	switch stage {
	case StageComponents, StageFinish:
		return 1
	case StageExamples:
		if p.examples() {
			return 1
		}
		return 0
	}
	return p.Tasks
}

// Stages lists the stages that have tasks in the plan, in the order
// they run: StageNames less examples without --report.
func (p *Plan) Stages() []string {
	var out []string
	for _, st := range StageNames {
		if p.TaskCount(st) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// OpenInput opens an input file: every read of an input goes through it.
func OpenInput(name string, opts corpus.Options) (corpus.Reader, error) {
	rd, err := corpus.Open(name, opts)
	if err != nil || AfterRead == nil {
		return rd, err
	}
	return &hookedReader{Reader: rd, name: name}, nil
}

// AfterRead, when set, is called after each input document a task reads,
// with the input's name and the document's number in it (tests kill the
// task there, in the middle of its uploads).
var AfterRead func(name string, n int64)

type hookedReader struct {
	corpus.Reader
	name string
	n    int64
}

func (r *hookedReader) Next() bool {
	if !r.Reader.Next() {
		return false
	}
	AfterRead(r.name, r.n)
	r.n++
	return true
}

// RestartBytes is the least input (decompressed bytes) between two
// restart points that CountDocs records in a file; tests make it small.
var RestartBytes int64 = 1 << 20

// maxRestarts bounds the restart points CountDocs holds for a file: past
// it, it keeps every other one and records them twice as far apart.
const maxRestarts = 1 << 16

// positioner is a reader that can say where another may start reading
// (corpus.JSONL, corpus.Lines).
type positioner interface {
	Position() (corpus.Position, bool)
}

// CountDocs counts the documents of name as the tasks' readers see them,
// and records restart points in it, about RestartBytes apart, where a
// task's reader of a range inside the file may start (Starts): for a
// JSONL or text file, local or on object storage (a ranged read), plain
// or compressed in many gzip members or zstd frames (a single member or
// frame restarts only at its start, decompressing from there: that saves
// the splitting into records only). Parquet files and web archives have
// none: their ranges read from the file's start.
//
// Bad records are counted as the tasks skip them, but a damaged file (a
// truncated gzip member, a corrupt zstd frame: corpus.ErrCorrupt) stops
// the count with the reader's error, as it stops a plain run, unless
// skipInvalid: then the count is of the documents before the damage, the
// ones the tasks read.
//
// It returns the version of the file it read (corpus.InputVersion), nil
// when not known, for SetVersions.
func CountDocs(ctx context.Context, name string, opts corpus.Options, skipInvalid bool) (int64, []dedup.RestartPoint, *corpus.Version, error) {
	opts.RawOnly = true
	opts.OnInvalid = func(re *corpus.RecordError) error {
		if !skipInvalid && errors.Is(re, corpus.ErrCorrupt) {
			return re
		}
		return nil
	}
	rd, err := OpenInput(name, opts)
	if err != nil {
		return 0, nil, nil, err
	}
	inner := rd
	if h, ok := rd.(*hookedReader); ok {
		inner = h.Reader
	}
	pos, _ := inner.(positioner)
	var points []dedup.RestartPoint
	every := max(RestartBytes, 1)
	next := every
	var n int64
	for rd.Next() {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			rd.Close()
			return 0, nil, nil, ctx.Err()
		}
		// The point after this document is at or after its line's end.
		if d := rd.Doc(); pos == nil || d.Offset+int64(len(d.Raw)) < next {
			continue
		}
		p, ok := pos.Position()
		if !ok {
			continue
		}
		if len(points) == maxRestarts {
			for k := range maxRestarts / 2 {
				points[k] = points[2*k+1]
			}
			points, every = points[:maxRestarts/2], 2*every
		}
		points = append(points, dedup.RestartPoint{Doc: n, Position: p})
		next = p.Offset + every
	}
	var version *corpus.Version
	if v, ok := corpus.InputVersion(inner); ok {
		version = &v
	}
	err = rd.Err()
	if cerr := rd.Close(); err == nil {
		err = cerr
	}
	return n, points, version, err
}

// Starts sets the restart point of each range of shards that begins
// inside a file (DocRange.From): the last of points[k] (CountDocs' of
// files[k]) at or before the range's first document.
func Starts(shards [][]dedup.DocRange, files []string, points [][]dedup.RestartPoint) {
	at := make(map[string][]dedup.RestartPoint, len(files))
	for k, f := range files {
		at[f] = points[k]
	}
	for _, rs := range shards {
		for k := range rs {
			rg := &rs[k]
			ps := at[rg.File]
			// The first point past Lo, then the one before it.
			i, _ := slices.BinarySearchFunc(ps, rg.Lo+1, func(p dedup.RestartPoint, doc int64) int { return cmp.Compare(p.Doc, doc) })
			if rg.Lo > 0 && i > 0 {
				p := ps[i-1]
				rg.From = &p
			}
		}
	}
}

// SetVersions records in each range of shards the version of its file,
// versions[k] that of files[k] (nil when not known), which the tasks'
// readers check (DocRange.Version).
func SetVersions(shards [][]dedup.DocRange, files []string, versions []*corpus.Version) {
	of := make(map[string]*corpus.Version, len(files))
	for k, f := range files {
		of[f] = versions[k]
	}
	for _, rs := range shards {
		for k := range rs {
			if v := of[rs[k].File]; v != nil {
				c := *v
				rs[k].Version = &c
			}
		}
	}
}

// Split cuts the files, of counts documents each, into tasks shards of
// nearly equal numbers of documents, in input order. A file of no
// documents has an empty range all the same, at its place (its bad
// records, if any, are reported by its sign task).
func Split(files []string, counts []int64, tasks int) [][]dedup.DocRange {
	var total int64
	for _, c := range counts {
		total += c
	}
	shards := make([][]dedup.DocRange, tasks)
	var at int64 // global position of files[f]'s first document
	f := 0
	for s := range tasks {
		lo, hi := total*int64(s)/int64(tasks), total*int64(s+1)/int64(tasks)
		for f < len(files) && lo < hi {
			flo, fhi := max(lo, at)-at, min(hi, at+counts[f])-at
			if flo < fhi || counts[f] == 0 {
				shards[s] = append(shards[s], dedup.DocRange{File: files[f], Lo: flo, Hi: fhi})
			}
			if at+counts[f] <= hi {
				at += counts[f]
				f++
				continue
			}
			break
		}
	}
	for ; f < len(files); f++ { // files of no documents after the last
		shards[tasks-1] = append(shards[tasks-1], dedup.DocRange{File: files[f]})
	}
	return shards
}

// SplitFiles cuts files, of sizes bytes each, into tasks shards of whole
// files (DocRange.Hi < 0), in input order, each of about the same number
// of bytes and none empty: the plan of an input of at least tasks files,
// made without reading them. sizes may be all equal when they are not
// known.
func SplitFiles(files []string, sizes []int64, tasks int) [][]dedup.DocRange {
	if len(files) < tasks {
		panic("staged: SplitFiles with fewer files than tasks")
	}
	cum := make([]int64, len(files)+1)
	for k, n := range sizes {
		cum[k+1] = cum[k] + max(n, 1)
	}
	shards := make([][]dedup.DocRange, tasks)
	lo := 0
	for s := range tasks {
		// Shard s ends after the first file that reaches its share of the
		// bytes, leaving a file for each shard after it.
		hi := len(files) - (tasks - s - 1)
		if s < tasks-1 {
			want := cum[len(files)] * int64(s+1) / int64(tasks)
			k := lo + 1
			for k < hi && cum[k] < want && cum[k+1]-want <= want-cum[k] {
				k++
			}
			hi = k
		}
		for k := lo; k < hi; k++ {
			shards[s] = append(shards[s], dedup.DocRange{File: files[k], Lo: 0, Hi: -1})
		}
		lo = hi
	}
	return shards
}

// Job is a plan and its work folder.
type Job struct {
	Work   *objstore.Folder
	Plan   *Plan
	TmpDir string // local scratch files ("" for the system's)
	// Stderr gets the tasks' notes.
	Stderr io.Writer
	// memLimit is the running task's memory limit (see memoryLimit).
	memLimit int64
	// packs are the pack indexes the running task read (readPack).
	packs map[string]*packIndex
	// stage is the running task's stage; metas the sign tasks' metas
	// it read (signMetas).
	stage string
	metas []signMetaFile
	// Usage, when set, says what the running task has used so far;
	// RunTask records it in the work folder (UsageName) as the task
	// ends, before its marker, so that what each task used is known
	// whatever ran it (a scheduler that reports nothing, such as Slurm
	// without accounting).
	Usage func() any
}

// NoTasksWhy says why a plan may have no task in stage (for the
// messages of RunTask and neardup task).
func NoTasksWhy(stage string) string {
	if stage == StageExamples {
		return "it chooses the examples of --report, which the job was planned without"
	}
	return "a stage of every job"
}

// ErrNoPlan is Load's error for a work folder without a plan.
var ErrNoPlan = errors.New("no plan")

// Load opens the work folder and reads its plan.
func Load(ctx context.Context, work string) (*Job, error) {
	f, err := objstore.Open(ctx, work)
	if err != nil {
		return nil, err
	}
	b, err := f.ReadAll(ctx, PlanName)
	if err != nil {
		f.Close()
		if errors.Is(err, objstore.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w: run `neardup dedup --executor local|print|slurm --work %s ...` first, which plans the job", f.URL(PlanName), ErrNoPlan, work)
		}
		return nil, err
	}
	p := &Plan{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", f.URL(PlanName), err)
	}
	if p.Version != PlanVersion {
		f.Close()
		return nil, fmt.Errorf("%s: plan version %d, this neardup reads %d", f.URL(PlanName), p.Version, PlanVersion)
	}
	return &Job{Work: f, Plan: p, Stderr: io.Discard}, nil
}

// MarshalPlan is the plan's file.
func MarshalPlan(p *Plan) ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	return append(b, '\n'), err
}

// Marker is the completion marker of task i of stage.
func Marker(stage string, i int) string { return fmt.Sprintf("done/%s-%05d", stage, i) }

// Done reports whether task i of stage left its marker and, for the
// stages that write outside the work folder (write: its part of -o,
// --clusters and --pairs; finish: --stats), whether what it wrote there
// is still there: a rerun of the same command runs again a task whose
// output was deleted after the job (it said the outputs were there).
func (j *Job) Done(ctx context.Context, stage string, i int) (bool, error) {
	ok, err := j.Work.Exists(ctx, Marker(stage, i))
	if err != nil || !ok {
		return false, err
	}
	var outs [][2]string // folder, name
	switch stage {
	case StageWrite:
		for _, dir := range []string{j.Plan.Kept, j.Plan.Clusters, j.Plan.Pairs} {
			if dir != "" {
				outs = append(outs, [2]string{dir, PartName(i)})
			}
		}
	case StageFinish:
		if j.Plan.Stats != "" {
			dir, name := splitLoc(j.Plan.Stats)
			outs = append(outs, [2]string{dir, name})
		}
	}
	for _, o := range outs {
		if ok, err := outputThere(ctx, o[0], o[1]); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// outputThere reports whether name exists in the output folder dir,
// without making a local folder that is not there.
func outputThere(ctx context.Context, dir, name string) (bool, error) {
	if !objstore.IsURL(dir) {
		_, err := os.Stat(filepath.Join(strings.TrimPrefix(dir, "file://"), name))
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	f, err := objstore.Open(ctx, dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return f.Exists(ctx, name)
}

// TaskError is a task's failure: it names the task, the shard and what
// it read or wrote.
type TaskError struct {
	Stage string
	Index int
	Shard string // the task's documents, when it reads input
	Err   error
}

func (e *TaskError) Error() string {
	s := fmt.Sprintf("task %s %d", e.Stage, e.Index)
	if e.Shard != "" {
		s += " (" + e.Shard + ")"
	}
	return s + ": " + e.Err.Error()
}

func (e *TaskError) Unwrap() error { return e.Err }

// shardName describes input shard s for messages.
func (j *Job) shardName(s int) string {
	rs := j.Plan.Shards[s]
	if len(rs) == 0 {
		return fmt.Sprintf("shard %d: no documents", s)
	}
	parts := make([]string, len(rs))
	for k, r := range rs {
		if r.Hi < 0 {
			parts[k] = r.File
		} else {
			parts[k] = fmt.Sprintf("%s documents %d-%d", r.File, r.Lo, r.Hi)
		}
	}
	return fmt.Sprintf("shard %d: %s", s, strings.Join(parts, ", "))
}

// Describe says what task i of stage works on, for the messages of an
// executor: its input shard for the stages that read the input (sign,
// write, and scatter where it sketches the documents of components
// again: dedup.SignedSets), else nothing.
func (j *Job) Describe(stage string, i int) string {
	reads := stage == StageSign || stage == StageWrite || stage == StageScatter && dedup.SignedSets(j.Plan.Options)
	if reads && i >= 0 && i < len(j.Plan.Shards) {
		return j.shardName(i)
	}
	return ""
}

// BeforeMarker, when set, is called when a task has written its files,
// before its marker (tests kill the task there).
var BeforeMarker func(stage string, i int)

// RunTask runs task i of stage, unless its marker says it is done.
func (j *Job) RunTask(ctx context.Context, stage string, i int) error {
	if !slices.Contains(StageNames, stage) {
		return fmt.Errorf("unknown stage %q (want one of %s)", stage, strings.Join(StageNames, ", "))
	}
	if n := j.Plan.TaskCount(stage); n == 0 {
		return fmt.Errorf("stage %s: the job has no task in it (%s)", stage, NoTasksWhy(stage))
	} else if i < 0 || i >= n {
		return fmt.Errorf("stage %s: task index %d out of range (0 to %d)", stage, i, n-1)
	}
	done, err := j.Done(ctx, stage, i)
	if err != nil {
		return &TaskError{Stage: stage, Index: i, Err: err}
	}
	if done {
		return nil
	}
	j.packs = nil
	if j.Plan.TaskMemory > 0 {
		j.memLimit = memoryLimit(j.Plan.TaskMemory)
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(j.memLimit))
	}
	j.stage, j.metas = stage, nil
	var shard string
	switch stage {
	case StageSign:
		shard = j.shardName(i)
		err = j.sign(ctx, i)
	case StageBucket:
		err = j.bucket(ctx, i)
	case StageComponents:
		err = j.components(ctx)
	case StageScatter:
		err = j.scatter(ctx, i)
	case StageJoin:
		err = j.join(ctx, i)
	case StageExamples:
		err = j.examples(ctx)
	case StageWrite:
		shard = j.shardName(i)
		err = j.write(ctx, i)
	case StageFinish:
		err = j.finish(ctx)
	}
	if err == nil {
		if BeforeMarker != nil {
			BeforeMarker(stage, i)
		}
		if j.Usage != nil {
			err = j.putJSON(ctx, UsageName(stage, i), j.Usage())
		}
	}
	if err == nil {
		err = j.Work.PutBytes(ctx, Marker(stage, i), []byte("done\n"))
	}
	if err != nil {
		return &TaskError{Stage: stage, Index: i, Shard: shard, Err: err}
	}
	return nil
}

// Names of the files of the stages.
func signIDs(s int) string                    { return fmt.Sprintf("sign/%05d/ids", s) }
func signSketches(s int) string               { return fmt.Sprintf("sign/%05d/sketches", s) }
func bucketIDs(p int) string                  { return fmt.Sprintf("bucket/ids-%05d", p) }
func signMeta(s int) string                   { return fmt.Sprintf("sign/%05d/meta.json", s) }
func signHits(s int) string                   { return fmt.Sprintf("sign/%05d/hits", s) }
func bucketEdges(p int) string                { return fmt.Sprintf("bucket/%05d", p) }
func componentsOf(s int) string               { return fmt.Sprintf("components/%05d", s) }
func scatterOf(s int) string                  { return fmt.Sprintf("scatter/%05d", s) }
func joinOf(g int) string                     { return fmt.Sprintf("join/%05d/shards", g) }
func joinStats(g int) string                  { return fmt.Sprintf("join/%05d/stats.json", g) }
func writeMeta(s int) string                  { return fmt.Sprintf("write/%05d.json", s) }
func PartName(s int) string                   { return fmt.Sprintf("part-%05d.jsonl", s) }
func componentsMeta() string                  { return "components/meta.json" }
func componentsShards() string                { return "components/shards.json" }
func readJSON(b []byte, v any) error          { return json.Unmarshal(b, v) }
func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// UsagePrefix begins the names of the tasks' records of what they used
// (Job.Usage); UsageName is task i of stage's.
const UsagePrefix = "usage/"

func UsageName(stage string, i int) string {
	return fmt.Sprintf("%s%s-%05d.json", UsagePrefix, stage, i)
}

// signBuckets is run r of sign task s (a task that did not spill writes
// run 0 only): a pack of 2N sections, 2p its keys of partition p, 2p+1
// its ids of id partition p.
func signBuckets(s, r int) string { return runName(fmt.Sprintf("sign/%05d/buckets", s), r) }

func runName(name string, r int) string {
	if r == 0 {
		return name
	}
	return fmt.Sprintf("%s.%d", name, r)
}

// signMetaFile is what a sign task says of its shard.
type signMetaFile struct {
	Documents   int64 `json:"documents"`
	Empty       int   `json:"empty"`
	InputBytes  int64 `json:"input_bytes"`
	Traditional int   `json:"traditional"`
	HTMLLike    int   `json:"html_like,omitempty"`
	Sketched    int64 `json:"sketched"` // documents with a sketch (the cascade: the method's, not a copy's)
	Runs        int   `json:"runs"`     // sorted runs of each partition
	// Copies is the cascade's documents whose text an earlier document
	// of the shard has (dedup.SignedDoc.Copy): their sketches carry
	// their content id alone.
	Copies int64 `json:"copies,omitempty"`
	// Old is how many of Documents are old (--against, DocRange.Old):
	// the shard's first ones.
	Old int64 `json:"old,omitempty"`
	// With --skip-invalid: Stats.Skipped, SkippedErrors (the shard's
	// first few) and Damaged of the shard.
	Skipped       int                 `json:"skipped,omitempty"`
	SkippedErrors []string            `json:"skipped_errors,omitempty"`
	Damaged       []dedup.DamagedFile `json:"damaged_files,omitempty"`
	// Stats.IDsFromPosition and IDsFromPositionFirst of the shard: the
	// documents whose id is their FILE:LINE (no --id-field, or an empty
	// one), and the first of them.
	IDsFromPosition      int    `json:"ids_from_position,omitempty"`
	IDsFromPositionFirst string `json:"ids_from_position_first,omitempty"`
	// IndexMatches is how many of the shard's documents were found in
	// Plan.Indexes, and IndexSimilarity their similarities' histogram
	// (dedup.Stats.Similarity's buckets).
	IndexMatches    int   `json:"index_matches,omitempty"`
	IndexSimilarity []int `json:"index_similarity,omitempty"`
}

// idsFromPositionName is where finish writes the job's
// Stats.IDsFromPosition and IDsFromPositionFirst (idsFromPositionFile),
// which dedup's --stats (StatsName) leaves out.
const idsFromPositionName = "finish/ids_from_position.json"

type idsFromPositionFile struct {
	N     int    `json:"n"`
	First string `json:"first,omitempty"`
}

func (j *Job) getJSON(ctx context.Context, name string, v any) error {
	b, err := j.Work.ReadAll(ctx, name)
	if err != nil {
		return err
	}
	if err := readJSON(b, v); err != nil {
		return fmt.Errorf("%s: %w", j.Work.URL(name), err)
	}
	return nil
}

func (j *Job) putJSON(ctx context.Context, name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return j.Work.PutBytes(ctx, name, append(b, '\n'))
}

// offsets returns the position of each shard's first document in the
// whole input, and the number of documents (from the sign tasks' metas).
func (j *Job) offsets(ctx context.Context) ([]int64, error) {
	metas, err := j.signMetas(ctx)
	if err != nil {
		return nil, err
	}
	off := make([]int64, j.Plan.Tasks+1)
	for s, m := range metas {
		off[s+1] = off[s] + m.Documents
	}
	if off[j.Plan.Tasks] > 1<<31-1 {
		return nil, fmt.Errorf("%d documents: more than a job holds (2^31-1)", off[j.Plan.Tasks])
	}
	return off, nil
}

// metaReaders is how many small objects (sign metas, run indexes, join
// cluster lists) a task reads at once.
const metaReaders = 16

// readEach calls read(0) to read(n-1), metaReaders at once, and returns
// the error of the first that failed in index order, whatever the
// timing.
func readEach(n int, read func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, metaReaders)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = read(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// signMetas returns every sign task's meta in shard order, read once a
// task: the tasks after components read the components task's copy of
// them all (componentsShards, one object, without the skipped records'
// errors and damaged files: finish reads those from each meta), the
// others (components and finish: one task each) the N metas, several at
// once. The bucket tasks read none: what they need of each shard is in
// its sign task's run 0 (signCounts). Without these each task of bucket,
// scatter and join read the N metas, twice in join: 5 N^2 small reads
// a job.
func (j *Job) signMetas(ctx context.Context) ([]signMetaFile, error) {
	if j.metas != nil {
		return j.metas, nil
	}
	metas := make([]signMetaFile, j.Plan.Tasks)
	switch j.stage {
	case StageScatter, StageJoin, StageWrite:
		if err := j.getJSON(ctx, componentsShards(), &metas); err != nil {
			return nil, err
		}
		if len(metas) != j.Plan.Tasks {
			return nil, fmt.Errorf("%s: damaged work file: %d shards, the plan has %d", j.Work.URL(componentsShards()), len(metas), j.Plan.Tasks)
		}
	default:
		err := readEach(len(metas), func(s int) error { return j.getJSON(ctx, signMeta(s), &metas[s]) })
		if err != nil {
			return nil, err
		}
	}
	j.metas = metas
	return metas, nil
}

// Documents is the input's number of documents, those of the old corpus
// (--against) not counted: the plan's count, or the sign tasks' when the
// plan did not count, counted bad records that --skip-invalid skipped or
// counted old documents.
func (j *Job) Documents(ctx context.Context) (int64, error) {
	hasOld := slices.ContainsFunc(j.Plan.Shards, func(rs []dedup.DocRange) bool {
		return slices.ContainsFunc(rs, func(r dedup.DocRange) bool { return r.Old })
	})
	if j.Plan.Documents >= 0 && !j.Plan.Input.SkipInvalid && !hasOld {
		return j.Plan.Documents, nil
	}
	off, err := j.offsets(ctx)
	if err != nil {
		return 0, err
	}
	_, old, err := j.sketched(ctx)
	return off[len(off)-1] - old, err
}

// Stats is the job's --stats as the finish task wrote it: the counts of
// a run of neardup dedup on the same input, without its times, memory
// and examples, with IDsFromPosition and IDsFromPositionFirst, which
// --stats leaves out.
func (j *Job) Stats(ctx context.Context) (*dedup.Stats, error) {
	st := &dedup.Stats{}
	if err := j.getJSON(ctx, StatsName, st); err != nil {
		return nil, err
	}
	var ids idsFromPositionFile
	if err := j.getJSON(ctx, idsFromPositionName, &ids); err != nil {
		return nil, err
	}
	st.IDsFromPosition, st.IDsFromPositionFirst = ids.N, ids.First
	return st, nil
}

// addSkipped adds what the sign task of m skipped to st, the stats of the
// shards before it.
func addSkipped(st *dedup.Stats, m *signMetaFile) {
	st.Skipped += m.Skipped
	// The shards are in input order: their first skipped records are
	// the input's.
	n := min(len(m.SkippedErrors), dedup.MaxSkippedErrors-len(st.SkippedErrors))
	st.SkippedErrors = append(st.SkippedErrors, m.SkippedErrors[:n]...)
	st.Damaged = append(st.Damaged, m.Damaged...)
}

// reader reads a work file sequentially.
type reader struct {
	*bufio.Reader
	c    io.Closer
	name string
}

func (j *Job) open(ctx context.Context, name string) (*reader, error) {
	rc, err := j.Work.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &reader{Reader: bufio.NewReaderSize(rc, 1<<20), c: rc, name: j.Work.URL(name)}, nil
}

func (r *reader) Close() error { return r.c.Close() }

func (r *reader) bad(err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: damaged work file: %w", r.name, err)
}

func (r *reader) uvarint() (uint64, error) {
	v, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, r.bad(err)
	}
	return v, nil
}

// bytes reads a length-prefixed string into buf.
func (r *reader) bytes(buf []byte) ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	if n > 1<<31 {
		return nil, r.bad(fmt.Errorf("a field of %d bytes", n))
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, r.bad(err)
	}
	return buf, nil
}

// atEOF reports whether the file is read to its end.
func (r *reader) atEOF() bool {
	_, err := r.Peek(1)
	return errors.Is(err, io.EOF)
}

// tmpDir is where tasks keep local scratch files.
func (j *Job) tmpDir() string {
	if j.TmpDir != "" {
		return j.TmpDir
	}
	return os.TempDir()
}

// putLocal puts the local file path under name in dst and removes it.
func putLocal(ctx context.Context, dst *objstore.Folder, name, path string) error {
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return dst.Put(ctx, name, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// splitLoc splits a file location (path or URL) into its folder and name.
func splitLoc(loc string) (dir, name string) {
	if objstore.IsURL(loc) {
		k := strings.LastIndex(loc, "/")
		return loc[:k], loc[k+1:]
	}
	return filepath.Dir(loc), filepath.Base(loc)
}

var _ = strconv.Itoa

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
