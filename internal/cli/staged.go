package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/executor"
	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/internal/staged"
	"github.com/neardup/neardup/store"
)

// stagedOpts are dedup's flags of the staged pipeline (--executor).
type stagedOpts struct {
	executor   string
	tasks      int
	work       string
	taskMemory string
	taskSpill  string
}

// defaultTaskMemory is --task-memory's default.
const defaultTaskMemory = "1GB"

func (s *stagedOpts) register(fs *pflag.FlagSet) {
	fs.StringVar(&s.executor, "executor", "", "run as stages of independent tasks exchanging files in --work: local (child processes, -j at once), slurm (job arrays), print (write the task commands and Kubernetes Indexed Job manifests); docs/scale.md")
	fs.IntVar(&s.tasks, "tasks", 0, "with --executor: tasks a stage (input shards); 0: the number of cores")
	fs.StringVar(&s.work, "work", "", "with --executor: the work folder (a path, s3://bucket/prefix or gs://bucket/prefix) that holds the plan, the tasks' files and their completion markers; the same command again resumes there, and another command (inputs, flags, outputs or --tasks changed) is refused until given an empty --work")
	s.taskMemory = defaultTaskMemory
	fs.Var((*sizeText)(&s.taskMemory), "task-memory", "with --executor: every task's memory budget (its garbage collector's limit, the scheduler's memory request); a task that would need more stops and says so")
	// --task-spill makes the tasks that spill (sign, bucket, scatter,
	// join) do so past a few bytes without a garbage collector's limit
	// that small: the tests' way to make them spill on a small corpus.
	fs.Var((*sizeText)(&s.taskSpill), "task-spill", "with --executor: the bytes a task holds before it spills (default: its share of --task-memory; for tests)")
	fs.MarkHidden("task-spill")
}

// runStaged is neardup dedup --executor: plan the job in the work folder,
// run its stages with the executor, and, unless it only printed them,
// report.
func runStaged(cmd *cobra.Command, o *dedupOpts, cfg dedup.Options, ropts corpus.Options, args []string, e *env) error {
	ctx := cmd.Context()
	so := o.staged
	switch so.executor {
	case "local", "print", "slurm":
	default:
		return usageErr("--executor %q: want local, slurm or print", so.executor)
	}
	refuse := func(flag string) error {
		return usageErr("%s: not with --executor %s (the staged pipeline does not do it yet); run without --executor", flag, so.executor)
	}
	switch {
	case so.work == "":
		return usageErr("--executor needs --work (a folder for the job's files)")
	case so.tasks < 0:
		return usageErr("--tasks %d: must be positive", so.tasks)
	case o.sample:
		return refuse("--sample")
	case o.resume:
		return refuse("--resume (a rerun of the same command resumes anyway)")
	case o.output == "-" || o.clusters == "-" || o.pairs == "-" || o.stats == "-":
		return usageErr("with --executor the outputs are folders (-o, --clusters, --pairs) and a file (--stats), not standard output")
	case len(args) == 0:
		return usageErr("no INPUT: give files or directories")
	}
	if err := dedup.CheckStaged(cfg); err != nil {
		if errors.Is(err, dedup.ErrUnknownMethod) {
			return err
		}
		if err := optionErr(err); errors.Is(err, errUsage) {
			return err // an option's error is a usage error already
		}
		return usageErr("%v", err)
	}
	for _, a := range args {
		if a == "-" {
			return usageErr("--executor cannot read standard input: its tasks read their shards themselves")
		}
	}
	if err := o.input.checkFormatUse(slices.Concat(args, o.against)); err != nil {
		return err
	}
	mem, err := parseSize(so.taskMemory)
	if err != nil || mem <= 0 {
		return usageErr("--task-memory %q: want a size such as 1GB", so.taskMemory)
	}
	var spill int64
	if so.taskSpill != "" {
		if spill, err = parseSize(so.taskSpill); err != nil || spill <= 0 {
			return usageErr("--task-spill %q: want a size such as 1MB", so.taskSpill)
		}
	}
	// maxTasks is the most tasks --tasks takes.
	const maxTasks = 100000
	tasks := so.tasks
	if tasks == 0 {
		tasks = runtime.NumCPU()
	}
	if tasks > maxTasks {
		return usageErr("--tasks %d: at most %s", tasks, number(maxTasks))
	}
	facts, err := dedup.StagedFacts(cfg)
	if err != nil {
		return optionErr(err)
	}
	spec, err := cfg.ResolveSpec()
	if err != nil {
		return optionErr(err)
	}
	cfg.Spec = spec
	cfg.Workers = 0
	plan := &staged.Plan{Version: staged.PlanVersion, Tasks: tasks, Options: cfg, Params: facts,
		Input: staged.InputOptions{TextField: ropts.TextField, IDField: ropts.IDField, MaxDocBytes: ropts.MaxDocBytes, StreamFormat: ropts.StreamFormat, SkipInvalid: o.input.skipInvalid},
		Kept:  o.output, Clusters: o.clusters, Pairs: o.pairs, Stats: o.stats, TaskMemory: mem, TaskWorkers: 1, SpillMemory: spill}
	if o.report != "" {
		// dedup's examples (runDedup): the job chooses the same ones.
		ex := o.examples
		if o.quiet {
			ex = 0
		}
		plan.Examples, plan.RandomExamples = max(ex, 10), 10
		if so.executor != "print" {
			// The report is written when the job ends: a path it
			// cannot be written to is said now, not then.
			if err := checkReportPath(o.report); err != nil {
				return err
			}
		}
	}
	if so.executor != "print" {
		// The write stage makes its output folders after every other
		// stage ran: a file in the way is said now, as a plain run says
		// a path it cannot write before reading its input.
		if err := checkOutputFolders(o); err != nil {
			return err
		}
		if err := checkOutputsWritable(o); err != nil {
			return err
		}
	}
	// The inputs are listed and checked before the work folder is
	// made: a refused input leaves no empty folder behind.
	exp, err := expandInputs(args, o.input.exclude)
	if err != nil {
		return err
	}
	// The old corpus (--against FILES) comes first, as in dedup: its
	// documents are numbered before the input's.
	old, indexes, named, err := stagedAgainst(o.against, o.input.exclude, exp.Files)
	for _, n := range named {
		if n.warn != "" {
			fmt.Fprintln(e.stderr, n.warn)
		}
	}
	if err != nil {
		return err
	}
	if len(indexes) > 0 {
		for _, loc := range indexes {
			ref, err := describeIndex(loc)
			if err != nil {
				return err
			}
			plan.Indexes = append(plan.Indexes, ref)
		}
	}
	files := slices.Concat(old, exp.Files)
	// A file no reader exists for is refused now, as dedup refuses it,
	// not by its sign task (exit 1, naming the task's log). --format
	// reaches the tasks through the plan (InputOptions.StreamFormat).
	if err := checkInputFormats(files, ropts); err != nil {
		return err
	}
	work, err := objstore.Open(ctx, so.work)
	if err != nil {
		return workErr(so.work, err)
	}
	defer work.Close()
	var ex executor.Executor
	var usage *usageLog // what the tasks used (not with print)
	switch so.executor {
	case "local":
		// With the work folder in object storage the logs stay on this
		// machine, in a folder of their own for each work folder.
		logs := filepath.Join(os.TempDir(), "neardup-task-logs", unsafeLogName.ReplaceAllString(so.work, "_"))
		if !objstore.IsURL(so.work) {
			logs = work.URL("logs")
		}
		jobs := o.workers
		if jobs <= 0 {
			jobs = runtime.NumCPU()
		}
		usage = &usageLog{}
		l := &executor.Local{Jobs: jobs, LogDir: logs, Usage: usage.add}
		if !o.quiet {
			l.Progress = e.stderr
		}
		ex = l
	case "print":
		job, err := k8sJobPrefix(work.URL(""))
		if err != nil {
			return err
		}
		ex = &executor.Print{Out: e.stdout, Program: "neardup", Job: job, Manifest: func(name string, b []byte) error {
			return work.PutBytes(ctx, "k8s/"+name, b)
		}}
	case "slurm":
		// The tasks' logs go where the compute nodes can write them: the
		// work folder when it is a (shared) path, else ./neardup-logs.
		// Partitions, accounts and time limits come from Slurm's own
		// SBATCH_* variables (docs/scale.md, "Slurm").
		sopts := executor.SlurmOptions{}
		if !objstore.IsURL(so.work) {
			sopts.LogDir = work.URL("logs")
		}
		if !o.quiet {
			sopts.Progress = e.stderr
		}
		if ex, err = executor.NewSlurm(sopts); err != nil {
			return usageErr("--executor slurm: %s", strings.TrimPrefix(sharedflags.Plain(err), "slurm: "))
		}
		usage = &usageLog{}
	}
	// The outputs in object storage are checked now (bucket, endpoint,
	// credentials), not by the write tasks at the end of the job.
	for _, out := range []struct{ flag, loc string }{{"-o", o.output}, {"--clusters", o.clusters}, {"--pairs", o.pairs}, {"--stats", statsFolder(o.stats)}} {
		if objstore.IsURL(out.loc) {
			f, err := objstore.Open(ctx, out.loc)
			if err != nil {
				return fmt.Errorf("%s: %w", out.flag, err)
			}
			f.Close()
		}
	}
	prev, err := work.ReadAll(ctx, staged.PlanName)
	switch {
	case err == nil:
		var was staged.Plan
		if err := json.Unmarshal(prev, &was); err != nil {
			return fmt.Errorf("%s: %w", work.URL(staged.PlanName), err)
		}
		plan.Shards, plan.Documents = was.Shards, was.Documents
		b, err := staged.MarshalPlan(plan)
		if err != nil {
			return err
		}
		if gone := goneFiles(was.Shards, files); len(gone) > 0 {
			return usageErr("%s: an input of the job planned in %s is gone (%d of its files); put it back, or start again with an empty --work", gone[0], work.URL(staged.PlanName), len(gone))
		}
		if was.Version != staged.PlanVersion {
			return usageErr("--work %s holds a job planned by another version of neardup (plan version %d, this one plans version %d; their work files differ): give an empty --work", so.work, was.Version, staged.PlanVersion)
		}
		if !bytes.Equal(b, prev) || !sameFiles(was.Shards, files) {
			what := "other inputs, flags, outputs or --tasks"
			if !sameFiles(was.Shards, files) {
				what = "other inputs: " + filesDifference(was.Shards, files)
			} else if d := planDifference(prev, b); d != "" {
				what = d
			}
			return usageErr("--work %s holds the plan of another job (%s): give an empty --work, or the same command as before to resume", so.work, what)
		}
		if !o.quiet {
			fmt.Fprintf(e.stderr, "resuming the job planned in %s\n", work.URL(staged.PlanName))
		}
	case errors.Is(err, objstore.ErrNotExist):
		noStarts, err := planShards(ctx, plan, files, exp.Versions, ropts)
		if err != nil {
			return err
		}
		if !o.quiet {
			warnReadFromStart(e.stderr, plan.Shards, noStarts)
		}
		markOld(plan, old)
		b, err := staged.MarshalPlan(plan)
		if err != nil {
			return err
		}
		if err := work.PutBytes(ctx, staged.PlanName, b); err != nil {
			return err
		}
	default:
		return err
	}
	exe, err := taskProgram()
	if err != nil {
		return err
	}
	var stages []executor.Stage
	job := &staged.Job{Work: work, Plan: plan}
	workArg := so.work
	if so.executor == "print" && !objstore.IsURL(workArg) {
		// The printed commands run elsewhere, in another directory.
		if workArg, err = filepath.Abs(workArg); err != nil {
			return err
		}
	}
	for _, name := range plan.Stages() {
		a := []string{exe, "task", "--work", workArg}
		if o.tmpDir != "" {
			a = append(a, "--tmp-dir", o.tmpDir)
		}
		stages = append(stages, executor.Stage{Name: name, Tasks: plan.TaskCount(name), Args: append(a, name), Memory: mem, CPUs: plan.TaskWorkers,
			Done: func(ctx context.Context, i int) (bool, error) { return job.Done(ctx, name, i) },
			Describe: func(i int) string {
				if d := job.Describe(name, i); d != "" {
					return d + ", work folder " + work.URL("")
				}
				return "work folder " + work.URL("")
			}})
	}
	err = ex.Run(ctx, stages)
	if usage != nil {
		var lines io.Writer
		if so.executor == "slurm" && !o.quiet {
			// The local executor prints each stage's line as it ends.
			lines = e.stderr
		}
		if serr := usage.save(context.WithoutCancel(ctx), work, plan, lines); err == nil && serr != nil {
			return fmt.Errorf("%s: %w", work.URL(usageName), serr)
		}
	}
	if err != nil {
		return err
	}
	if so.executor == "print" {
		if !o.quiet {
			fmt.Fprintf(e.stderr, "planned %s in %d shards in %s; the task commands are on standard output, Kubernetes manifests in %s\n", plannedDocs(plan), plan.Tasks, work.URL(staged.PlanName), work.URL("k8s"))
			if o.report != "" {
				// The tasks gather what the report shows; the page is
				// rendered by the command, which finds them all done.
				fmt.Fprintf(e.stderr, "--report: once the tasks are done, run this command again with --executor local: it runs nothing and writes %s\n", o.report)
			}
		}
		return nil
	}
	n, err := job.Documents(ctx)
	if err != nil {
		return err
	}
	st, err := job.Stats(ctx)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("id-field") {
		warnIDsFromPosition(e.stderr, o.input.fields.IDField, st.IDsFromPosition, st.Documents, st.IDsFromPositionFirst)
	}
	if o.report != "" {
		rf, err := job.Report(ctx)
		if err != nil {
			return err
		}
		var uf usageFile // what the tasks used, as saved above
		if b, err := work.ReadAll(ctx, usageName); err == nil {
			json.Unmarshal(b, &uf)
		}
		if err := writeStagedReport(o.report, cfg, st, reportSource(false, exp.Files), rf, uf.Stages); err != nil {
			return err
		}
	}
	if !o.quiet {
		printStagedSummary(e.stderr, st, reportSource(false, exp.Files), plan.Tasks, o, named...)
	}
	// As dedup: documents that share an id are a warning even with -q.
	warnDuplicateIDs(e.stderr, st, o.input.fields.IDField, exp.Files)
	if err := allSkipped(n, int64(st.Skipped), st.SkippedErrors); err != nil {
		return err
	}
	return inputLost(st.Damaged, o.input.allowTruncated)
}

// printStagedSummary writes a staged job's summary: dedup's, without its
// times, memory and examples (each task has its own; the executor's lines
// gave them), and where the outputs went.
func printStagedSummary(w io.Writer, st *dedup.Stats, source string, tasks int, o *dedupOpts, indexes ...savedIndex) {
	fmt.Fprintf(w, "neardup dedup --method %s: %s from %s, in %s\n", st.Method, plural(st.Documents, "document"), source, plural(tasks, "shard"))
	sw := summaryWriter{w}
	sw.outcome(st)
	sw.savedIndexes(indexes)
	sw.params(st.Params.Map())
	for _, out := range []struct{ what, loc string }{{"kept documents", o.output}, {"clusters", o.clusters}, {"pairs", o.pairs}} {
		if out.loc != "" {
			sw.line("%s in %s/part-*", out.what, strings.TrimSuffix(out.loc, "/"))
		}
	}
	if o.stats != "" {
		sw.line("stats in %s", o.stats)
	}
	if o.report != "" {
		where := o.report
		if abs, err := filepath.Abs(o.report); err == nil && !objstore.IsURL(o.report) {
			where = abs
		}
		sw.line("report: %s (open it in a browser)", where)
	}
}

// stagedAgainst expands --against's paths into the old corpus's files
// and its saved indexes (their locations, in order); standard input and a
// file that is also an input are refused. named says what each index
// matches by, for the summary.
func stagedAgainst(against, exclude, inputs []string) (files, indexes []string, named []savedIndex, err error) {
	if len(against) == 0 {
		return nil, nil, nil, nil
	}
	if slices.Contains(against, "-") {
		return nil, nil, nil, usageErr("--against cannot read standard input")
	}
	paths, _, closers, named, err := splitAgainst(against)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range closers {
		c.Close()
	}
	for _, p := range against {
		if !slices.Contains(paths, p) {
			indexes = append(indexes, p)
		}
	}
	if len(paths) == 0 {
		return nil, indexes, named, nil
	}
	e, err := expandFlagInputs("--against", paths, exclude)
	if err != nil {
		return nil, nil, nil, err
	}
	in := make(map[string]bool, len(inputs))
	for _, f := range inputs {
		in[f] = true
	}
	for _, f := range e.Files {
		if in[f] {
			return nil, nil, nil, usageErr("%s: both an input and --against: with --executor a file is one or the other", f)
		}
	}
	return e.Files, indexes, named, nil
}

// describeIndex opens the saved index at loc as the sign tasks will, and
// returns what the plan records of it (staged.IndexRef): a task, or a
// resumed job, that finds it changed stops.
func describeIndex(loc string) (staged.IndexRef, error) {
	if !objstore.IsURL(loc) && !store.IsURL(loc) {
		// The tasks may run in another directory (--executor print,
		// slurm).
		abs, err := filepath.Abs(loc)
		if err != nil {
			return staged.IndexRef{}, err
		}
		loc = abs
	}
	ix, err := staged.OpenIndex(loc)
	if err != nil {
		return staged.IndexRef{}, indexErr("--against", loc, err)
	}
	defer ix.Close()
	return staged.DescribeIndex(loc, ix)
}

// markOld marks the ranges of the old corpus's files in the plan.
func markOld(plan *staged.Plan, old []string) {
	isOld := make(map[string]bool, len(old))
	for _, f := range old {
		isOld[f] = true
	}
	for _, rs := range plan.Shards {
		for k := range rs {
			rs[k].Old = isOld[rs[k].File]
		}
	}
}

// unsafeLogName matches what a work folder's URL may hold that a folder
// name should not.
var unsafeLogName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// checkOutputFolders refuses (exit 2) an output of a staged run that
// names an existing path of the wrong kind: -o, --clusters and --pairs are
// folders of part-NNNNN.jsonl files, --stats a file. Object storage has no
// such paths; a new path is made by the job.
func checkOutputFolders(o *dedupOpts) error {
	for _, c := range []struct{ flag, path string }{{"-o", o.output}, {"--clusters", o.clusters}, {"--pairs", o.pairs}} {
		if c.path == "" || objstore.IsURL(c.path) {
			continue
		}
		if st, err := os.Stat(c.path); err == nil && !st.IsDir() {
			return usageErr("%s %s: an existing file; with --executor %s is a folder of part-NNNNN.jsonl files: give a folder, or a new path", c.flag, c.path, c.flag)
		}
		if msg := fileInTheWay(c.flag, c.path); msg != "" {
			return usageErr("%s", msg)
		}
	}
	if o.stats != "" && !objstore.IsURL(o.stats) {
		if st, err := os.Stat(o.stats); err == nil && st.IsDir() {
			return usageErr("--stats %s: a folder; --stats is a file, with --executor too: give a file's path", o.stats)
		}
		if msg := fileInTheWay("--stats", o.stats); msg != "" {
			return usageErr("%s", msg)
		}
	}
	return nil
}

// checkOutputsWritable fails (exit 1, as dedup's check of its outputs)
// when a local output of a staged run cannot be written: a file made and
// removed in the output's folder, or in the nearest folder above it that
// exists (the job makes the others), says so before the first task runs,
// not in the write or finish stage after every other.
func checkOutputsWritable(o *dedupOpts) error {
	for _, c := range []struct{ flag, path, dir string }{{"-o", o.output, o.output}, {"--clusters", o.clusters, o.clusters}, {"--pairs", o.pairs, o.pairs}, {"--stats", o.stats, filepath.Dir(o.stats)}} {
		if c.path == "" || objstore.IsURL(c.path) {
			continue
		}
		dir := c.dir
		for {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
			dir = filepath.Dir(dir)
		}
		f, err := os.CreateTemp(dir, ".neardup-check-*")
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return fmt.Errorf("%s %s: cannot write in %s: %w", c.flag, c.path, dir, err)
		}
		f.Close()
		os.Remove(f.Name())
	}
	return nil
}

// workErr names --work in the error of opening the work folder ("mkdir
// /proc/w: no such file or directory" named no flag), saying its
// location once; err stays wrapped.
func workErr(work string, err error) error {
	msg, _ := strings.CutPrefix(err.Error(), work+": ")
	return &wordedErr{msg: "--work " + work + ": " + msg, err: err}
}

// statsFolder is the folder of the --stats file, "" for none.
func statsFolder(stats string) string {
	if stats == "" {
		return ""
	}
	if objstore.IsURL(stats) {
		if dir, _, err := objstore.SplitURL(stats); err == nil {
			return dir
		}
		return stats
	}
	return filepath.Dir(stats)
}

// goneFiles lists the files of the shards that are not among files and
// are gone: a local file that still exists is not (the command names other
// inputs: a job of its own, not this one with files missing).
func goneFiles(shards [][]dedup.DocRange, files []string) []string {
	have := make(map[string]bool, len(files))
	for _, f := range files {
		have[f] = true
	}
	var gone []string
	for _, rs := range shards {
		for _, r := range rs {
			if have[r.File] || len(gone) > 0 && gone[len(gone)-1] == r.File {
				continue
			}
			if !objstore.IsURL(r.File) {
				if _, err := os.Stat(r.File); err == nil {
					continue // still there: this command names other inputs
				}
			}
			gone = append(gone, r.File)
		}
	}
	return gone
}

// k8sJobPrefix names the Kubernetes Jobs that --executor print writes
// (k8s/NN-STAGE.yaml), each PREFIX-STAGE: it is neardup-HASH, HASH 8 hex
// digits of the SHA-256 of the work folder (a path made absolute, a URL as
// the folder names it, without a trailing slash). Two jobs in one
// namespace, which have two work folders, get Jobs of their own names; the
// same job printed again (a resumed job) gets the same names.
func k8sJobPrefix(work string) (string, error) {
	if !objstore.IsURL(work) {
		abs, err := filepath.Abs(work)
		if err != nil {
			return "", err
		}
		work = abs
	}
	sum := sha256.Sum256([]byte(work))
	return "neardup-" + hex.EncodeToString(sum[:4]), nil
}

// planShards cuts the input files into the plan's shards. An input of at
// least --tasks files is cut between files by their sizes, without reading
// them (an object's size from its prefix's listing, or asked of its store,
// objstore.Versions); a smaller one is read once to count its documents, and cut across and within files into runs
// of nearly equal numbers of documents, each range inside a file starting
// at a restart point recorded while counting (staged.Starts). It returns
// the counted files in which it found no restart point.
func planShards(ctx context.Context, plan *staged.Plan, files []string, listed map[string]corpus.Version, ropts corpus.Options) (noStarts []string, err error) {
	versions := make([]*corpus.Version, len(files))
	if len(files) >= plan.Tasks {
		sizes := make([]int64, len(files))
		var urls []string
		var at []int
		for k, f := range files {
			if v, ok := listed[f]; ok {
				sizes[k], versions[k] = v.Size, &v
			} else if objstore.IsURL(f) {
				urls, at = append(urls, f), append(at, k)
			} else {
				fi, err := os.Stat(f)
				if err != nil {
					var pe *fs.PathError
					if errors.As(err, &pe) {
						err = pe.Err // the file is named below
					}
					return nil, fmt.Errorf("%s: %w (while planning the job)", f, err)
				}
				sizes[k] = fi.Size()
				if fi.Mode().IsRegular() {
					versions[k] = &corpus.Version{Size: fi.Size(), Tag: strconv.FormatInt(fi.ModTime().UnixNano(), 10)}
				}
			}
		}
		if len(urls) > 0 {
			got, err := objstore.Versions(ctx, urls)
			if err != nil {
				return nil, fmt.Errorf("%w (while planning the job)", err)
			}
			for j, k := range at {
				sizes[k] = got[j].Size
				if got[j].Tag() != "" {
					versions[k] = &corpus.Version{Size: got[j].Size, Tag: got[j].Tag()}
				}
			}
		}
		plan.Shards, plan.Documents = staged.SplitFiles(files, sizes, plan.Tasks), -1
		staged.SetVersions(plan.Shards, files, versions)
		return nil, nil
	}
	counts := make([]int64, len(files))
	points := make([][]dedup.RestartPoint, len(files))
	for k, f := range files {
		var err error
		if counts[k], points[k], versions[k], err = staged.CountDocs(ctx, f, ropts, plan.Input.SkipInvalid); err != nil {
			// The error names the file and the record, as a plain
			// run's does.
			return nil, fmt.Errorf("%w (while counting the documents to plan the job)", err)
		}
		plan.Documents += counts[k]
		if len(points[k]) == 0 {
			noStarts = append(noStarts, f)
		}
	}
	plan.Shards = staged.Split(files, counts, plan.Tasks)
	staged.Starts(plan.Shards, files, points)
	staged.SetVersions(plan.Shards, files, versions)
	return noStarts, nil
}

// readFromStartWarnBytes is, for one input file, the bytes its ranges'
// tasks read before their first document, all ranges together, from
// which the plan warns: below it, reading again from the file's start
// costs little.
var readFromStartWarnBytes int64 = 256 << 20

// warnReadFromStart warns about each local input file whose ranges'
// tasks would read much of it only to reach their first documents: the
// plan cuts it inside, and its ranges start at a restart point that is
// far before them (DocRange.From.Skip: the decompressed bytes to skip
// inside one gzip member or one zstd frame, which can be decompressed
// only from its start) or at the file's start (noStarts: counted files
// with no restart point, such as Parquet files and web archives; their
// bytes before a range are estimated from its share of the documents).
// Every reading stage (sign, scatter, write) pays it: 8 shards of one
// such file read it about 4.5 times over.
func warnReadFromStart(w io.Writer, shards [][]dedup.DocRange, noStarts []string) {
	type file struct {
		ranges, far int
		docs, skip  int64
		noStart     []int64 // the Lo of ranges read from the start
	}
	var order []string
	seen := map[string]*file{}
	for _, rs := range shards {
		for _, rg := range rs {
			f := seen[rg.File]
			if f == nil {
				f = &file{}
				seen[rg.File] = f
				order = append(order, rg.File)
			}
			f.ranges++
			f.docs = max(f.docs, rg.Hi)
			switch {
			case rg.From != nil && rg.From.Skip > 0:
				f.far++
				f.skip += rg.From.Skip
			case rg.From == nil && rg.Lo > 0 && slices.Contains(noStarts, rg.File):
				f.far++
				f.noStart = append(f.noStart, rg.Lo)
			}
		}
	}
	for _, name := range order {
		f := seen[name]
		if f.far == 0 || objstore.IsURL(name) {
			continue
		}
		st, err := os.Stat(name)
		if err != nil {
			continue
		}
		for _, lo := range f.noStart {
			f.skip += int64(float64(st.Size()) * float64(lo) / float64(max(f.docs, 1)))
		}
		if f.skip < readFromStartWarnBytes {
			continue
		}
		fmt.Fprintf(w, "neardup: warning: %s is cut into %d shards, and the tasks of %d of them read %s of it only to reach their first document (one gzip member or zstd frame, which decompresses only from its start, or a Parquet file or web archive), at each stage that reads the input; give it as several files, or compress it in many members or frames (bgzip, pzstd), for tasks that start where their shard does (docs/scale.md, \"Ranges inside a file\")\n",
			name, f.ranges, f.far, formatSize(f.skip))
	}
}

// plannedDocs says how many documents the plan counted.
func plannedDocs(plan *staged.Plan) string {
	if plan.Documents < 0 {
		return "the input files (not counted)"
	}
	return fmt.Sprintf("%d documents", plan.Documents)
}

// planDifference names the first place where two plans, as JSON, differ:
// `"tasks" is 3 in the plan, 4 in this command`; "" when it finds none.
func planDifference(was, now []byte) string {
	var a, b any
	da, db := json.NewDecoder(bytes.NewReader(was)), json.NewDecoder(bytes.NewReader(now))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&a) != nil || db.Decode(&b) != nil {
		return ""
	}
	path, x, y, ok := firstDifference("", a, b)
	if !ok {
		return ""
	}
	// The banding follows from --threshold and --num-perm, and the keys
	// come in name order ("minhash.bands" before "threshold"): name the
	// flag that was changed, not a value derived from it.
	for _, p := range []string{"options.Spec.threshold", "options.Spec.minhash.num_perm", "options.Spec.simhash.bits", "options.Spec.simhash.distance"} {
		if u, v := planAt(a, p), planAt(b, p); u != nil && v != nil {
			if q, _, _, differ := firstDifference(p, u, v); differ {
				path, x, y = q, u, v
				break
			}
		}
	}
	// --report makes the job choose example clusters: the plan keeps
	// their numbers, which no flag of their own names.
	if path == "examples" || path == "random_examples" {
		if x == nil {
			return "--report is given to this command, not to the job planned there"
		}
		if y == nil {
			return "--report was given to the job planned there, not to this command"
		}
		path = "examples"
	}
	// The cascade and its --then are one flag's value with --method:
	// the plan keeps them as two options.
	if ma, mb := planMethod(a), planMethod(b); (path == "options.Cascade" || path == "options.Method") && ma != mb {
		return fmt.Sprintf("--method is %s in the plan, %s in this command", ma, mb)
	}
	show := func(v any) string {
		if v == nil {
			return "absent"
		}
		j, _ := json.Marshal(v)
		return human.Clip(string(j), 80) // on a rune: it cut a byte of 重 in two

	}
	// The plan keeps these options by number; the flags take names.
	if name, ok := planEnums[path]; ok {
		show = func(v any) string {
			if n, ok := v.(json.Number); ok {
				if i, err := n.Int64(); err == nil {
					return name(int(i))
				}
			}
			j, _ := json.Marshal(v)
			return string(j)
		}
	}
	return fmt.Sprintf("%s is %s in the plan, %s in this command", planFlag(path), show(x), show(y))
}

// planAt is the value at path (dot-separated keys) of a decoded JSON
// object, or nil.
func planAt(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// planMethod is the plan's method (decoded JSON) as --method and --then
// give it: "minhash", or "cascade --then minhash".
func planMethod(plan any) string {
	p, _ := plan.(map[string]any)
	o, _ := p["options"].(map[string]any)
	m, _ := o["Method"].(string)
	if m == "" {
		m = "minhash"
	}
	if c, _ := o["Cascade"].(bool); c {
		return "cascade --then " + m
	}
	return m
}

// planEnums name the values of the plan's options kept as numbers.
var planEnums = map[string]func(int) string{
	"options.Cluster": func(i int) string { return cluster.Mode(i).String() },
	"options.Keep":    func(i int) string { return cluster.Policy(i).String() },
	"options.Device":  func(i int) string { return dedup.Device(i).String() },
}

// planFlag names the flag that sets the plan's field at path (a JSON
// path: options.Keep, options.Spec.shingle.n), or the path quoted when no
// one flag does.
func planFlag(path string) string {
	if f, ok := planFlags[path]; ok {
		return f
	}
	if spec, ok := strings.CutPrefix(path, "options.Spec."); ok {
		if f, ok := specFlags[spec]; ok {
			return f
		}
	} else if opt, ok := strings.CutPrefix(path, "options."); ok {
		if f, ok := optionFlags[opt]; ok {
			return f
		}
	}
	return strconv.Quote(path)
}

// specFlags are the flags of a sketch.Spec's JSON fields (sketch/json.go).
var specFlags = map[string]string{"method": "--method", "threshold": "--threshold",
	"normalize.nfkc": "--nfkc", "normalize.case_fold": "--case-fold", "normalize.whitespace": "--fold-whitespace",
	"normalize.punctuation": "--fold-punct", "normalize.html": "--html", "normalize.html_all": "--html-all",
	"normalize.t2s": "--t2s", "normalize.stop_words": "--stop-words",
	"shingle.unit": "--unit", "shingle.n": "--ngram", "shingle.seed": "--seed",
	"minhash.num_perm": "--num-perm", "minhash.family": "--minhash-family", "minhash.seed": "--seed",
	"minhash.bands": "--bands", "minhash.rows": "--rows", "minhash.threshold": "--threshold",
	"simhash.bits": "--bits", "simhash.distance": "--distance", "simhash.weights": "--weights",
	"simhash.seed": "--seed", "simhash.blocks": "--blocks", "ksentence.k": "--k-sentences"}

// planFlags are the flags of the plan's fields that one flag sets.
var planFlags = map[string]string{"examples": "--examples", "tasks": "--tasks", "kept": "-o", "clusters": "--clusters",
	"pairs": "--pairs", "stats": "--stats", "task_memory": "--task-memory"}

// firstDifference walks two decoded JSON values in order (object keys
// sorted) and returns the path and the values of the first difference.
func firstDifference(path string, a, b any) (string, any, any, bool) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, a, b, true
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			if p, u, v, ok := firstDifference(join(k), x[k], y[k]); ok {
				return p, u, v, true
			}
		}
		return "", nil, nil, false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path, a, b, true
		}
		for i := range x {
			if p, u, v, ok := firstDifference(join(strconv.Itoa(i)), x[i], y[i]); ok {
				return p, u, v, true
			}
		}
		return "", nil, nil, false
	}
	if a != b {
		return path, a, b, true
	}
	return "", nil, nil, false
}

// filesDifference names the first input file where the plan's shards and
// files differ.
func filesDifference(shards [][]dedup.DocRange, files []string) string {
	had := shardFiles(shards)
	for k := range min(len(had), len(files)) {
		if had[k] != files[k] {
			return fmt.Sprintf("input %d is %s in the plan, %s in this command", k+1, had[k], files[k])
		}
	}
	return fmt.Sprintf("%s input files in the plan, %s in this command", number(len(had)), number(len(files)))
}

// shardFiles lists the files of the shards' ranges, in order, once each.
func shardFiles(shards [][]dedup.DocRange) []string {
	var had []string
	for _, rs := range shards {
		for _, r := range rs {
			if len(had) == 0 || had[len(had)-1] != r.File {
				had = append(had, r.File)
			}
		}
	}
	return had
}

// sameFiles reports whether the shards cover exactly files, in order.
func sameFiles(shards [][]dedup.DocRange, files []string) bool {
	had := shardFiles(shards)
	if len(had) != len(files) {
		// Plans before version 5 gave a file of no documents no range:
		// compare what has one.
		return len(had) <= len(files)
	}
	for k := range had {
		if had[k] != files[k] {
			return false
		}
	}
	return true
}

func newTaskCmd(e *env) *cobra.Command {
	var work, tmpDir, cpuProfile string
	cmd := &cobra.Command{
		Use:   "task --work URL STAGE [INDEX]",
		Short: "Run one task of a staged job (neardup dedup --executor)",
		Long: `Run task INDEX of stage STAGE of the job planned in the work folder URL by
neardup dedup --executor. Without INDEX the index comes from
SLURM_ARRAY_TASK_ID (a Slurm job array) or JOB_COMPLETION_INDEX (a
Kubernetes Indexed Job). A task that is done (its completion marker exists)
does nothing; a task writes each of its files whole, so it may run again
after a crash, or twice at once. The stages, in order: ` + strings.Join(staged.StageNames, ", ") + `.

` + exitHelp,
		Args: rangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if work == "" {
				return usageErr("task needs --work")
			}
			if !slices.Contains(staged.StageNames, args[0]) {
				return usageErr("unknown stage %q (want one of %s)", args[0], strings.Join(staged.StageNames, ", "))
			}
			index := -1
			src := "INDEX"
			raw := ""
			switch {
			case len(args) == 2:
				raw = args[1]
			case os.Getenv("SLURM_ARRAY_TASK_ID") != "":
				raw, src = os.Getenv("SLURM_ARRAY_TASK_ID"), "SLURM_ARRAY_TASK_ID"
			case os.Getenv("JOB_COMPLETION_INDEX") != "":
				raw, src = os.Getenv("JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX"
			}
			if raw != "" {
				n, err := strconv.Atoi(raw)
				if err != nil || n < 0 {
					return usageErr("%s %q: want a task index (0, 1, ...)", src, raw)
				}
				index = n
			}
			job, err := staged.Load(cmd.Context(), work)
			if errors.Is(err, staged.ErrNoPlan) {
				return usageErr("%v", err)
			}
			if err != nil {
				if index >= 0 {
					return fmt.Errorf("task %s %d: %w", args[0], index, err)
				}
				return fmt.Errorf("task %s: %w", args[0], err)
			}
			defer job.Work.Close()
			if job.Plan.TaskCount(args[0]) == 0 {
				return usageErr("stage %s: the job planned in %s has no task in it (%s)", args[0], work, staged.NoTasksWhy(args[0]))
			}
			if index < 0 {
				if job.Plan.TaskCount(args[0]) != 1 {
					return usageErr("no task index: give INDEX, or set SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX")
				}
				index = 0
			}
			if n := job.Plan.TaskCount(args[0]); index >= n {
				return usageErr("stage %s: task index %d out of range: the job planned in %s has %d task(s) in it (0 to %d)", args[0], index, work, n, n-1)
			}
			job.TmpDir, job.Stderr = tmpDir, e.stderr
			stage := args[0]
			job.Usage = func() any { return newTaskUsage(stage, index, executor.OwnUsage()) }
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			err = job.RunTask(cmd.Context(), args[0], index)
			// The local executor reads what the task used from this
			// file (its rusage would count the parent's pages).
			if perr := executor.WritePeak(); err == nil {
				err = perr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&work, "work", "", "the job's work folder (a path, s3://... or gs://...)")
	cmd.Flags().StringVar(&tmpDir, "tmp-dir", "", "directory for the task's local scratch files (default: the system's)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write the task's CPU profile (pprof) to this file (for performance work)")
	cmd.Flags().MarkHidden("cpuprofile")
	return cmd
}

// taskProgram is the program the local executor runs for a task: this
// one, by the name it was started with (a link's name, not its target).
func taskProgram() (string, error) {
	p := os.Args[0]
	if !strings.ContainsRune(p, os.PathSeparator) {
		if lp, err := exec.LookPath(p); err == nil {
			p = lp
		} else {
			return os.Executable()
		}
	}
	return filepath.Abs(p)
}
