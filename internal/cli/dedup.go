package cli

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/sample"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/report"
	"github.com/neardup/neardup/sketch"
)

type dedupOpts struct {
	method     string
	then       string // --method cascade's near method
	sketch     sketchFlags
	join       sharedflags.Join // --verify, --estimate-only, --keep
	idfFile    string
	clustering string
	keyField   string
	bloomN     int
	bloomFPP   float64
	bloomFile  string
	saveIDF    string
	workers    int
	memory     string
	spill      bool
	against    []string
	resume     bool

	output   string
	clusters string
	pairs    string
	stats    string
	report   string
	tmpDir   string
	examples int
	quiet    bool
	sample   bool
	cpuProf  string
	memProf  string
	trace    string
	// optionsJSON is a file of dedup.Options as JSON that replaces the
	// options of the flags (bench's child runs).
	optionsJSON string

	input inputFlags

	pairsMode string
	device    string

	staged stagedOpts
}

func newDedupCmd(e *env) *cobra.Command {
	return newDedupCmdOpts(e, &dedupOpts{})
}

// newDedupCmdOpts is newDedupCmd with its flags bound to o.
func newDedupCmdOpts(e *env, o *dedupOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dedup [flags] INPUT...",
		Short: "Remove near-duplicate documents",
		Long: `Find the duplicate documents of the input and keep one of each cluster.

INPUT is a file or a directory (walked in sorted order), or - for JSONL on
standard input. --sample runs on the embedded sample corpus (Bible verses in
six English revisions and in Traditional and Simplified Chinese).

The summary goes to standard error. --output writes the kept documents
unchanged, in input order; --clusters writes one line per input document
{"id","cluster","kept"} where cluster is the id of the kept document;
--pairs writes one line per duplicate pair {"id1","id2","similarity"}: by
default the pairs that joined two clusters (a spanning forest, one pair per
removed document), with --pairs-mode all every verified pair; what each
method's outputs mean is in docs/outputs.md.
--method cascade finds the exact copies first (identical normalised text,
never shingled or signed) and runs --then (minhash by default, simhash or
jaccard, with its flags) on the rest: the clusters of --method THEN alone,
and the summary counts exact copies and near duplicates apart.
Regular output files are replaced atomically, and only when the run succeeds.

` + exitHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDedup(cmd, o, args, e)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&o.method, "method", sketch.MinHash.String(), methodsHelp()+"; cascade: exact copies first, then --then on the rest (the clusters of --method THEN alone, without sketching the copies)")
	fs.StringVar(&o.then, "then", sharedflags.DefaultThen, "--method cascade: the near-duplicate method after the exact stage: "+strings.Join(sharedflags.CascadeMethods, ", ")+" (its flags apply)")
	o.sketch.register(fs, groupThreshold|groupShingle|groupMinHash|groupSeed|groupSimHash|groupKSentence)
	o.join.Register(fs)
	fs.StringVar(&o.idfFile, "idf", "", "simhash --weights tfidf: use this IDF table instead of learning one in a first pass")
	fs.StringVar(&o.clustering, "cluster", cluster.Components.String(), "how pairs become clusters: components (connected components) or leader (minhash, simhash: every removed document is a verified near-duplicate of its cluster's kept document, leaders chosen in --keep order; in memory only)")
	fs.StringVar(&o.keyField, "key-field", "", "bloom: deduplicate on this JSON field (a URL, say) instead of the text")
	fs.IntVar(&o.bloomN, "bloom-n", 0, "bloom: expected number of distinct items (0: 10 million)")
	fs.Float64Var(&o.bloomFPP, "bloom-fpp", dedup.DefaultBloomFPP, "bloom: target false-positive probability")
	fs.StringVar(&o.bloomFile, "bloom-filter", "", "bloom: a filter file kept across runs: loaded when it exists (keys of earlier runs count as seen), saved when the run succeeds")
	fs.StringVar(&o.saveIDF, "save-idf", "", "simhash --weights tfidf: save the IDF table used to this file when the run succeeds")
	fs.IntVarP(&o.workers, "workers", "j", 0, "worker goroutines (0: all cores); the result is the same for any number")
	fs.Var((*sizeText)(&o.memory), "memory", "memory budget, e.g. 256MB or 4GiB (default: half of RAM); over it, bucket keys spill to --tmp-dir")
	fs.BoolVar(&o.spill, "spill", false, "spill bucket keys to disk even when the estimate fits in memory")
	fs.StringArrayVar(&o.against, "against", nil, "an old corpus (file or directory) or a saved index (an 'index create' directory; queried with its own parameters); repeatable: remove input documents that duplicate it, never its own")
	fs.StringVarP(&o.output, "output", "o", "", "write the kept documents here (format from the name; - for stdout)")
	fs.StringVar(&o.clusters, "clusters", "", "write {id, cluster, kept} per input document here (JSONL)")
	fs.StringVar(&o.pairs, "pairs", "", "write {id1, id2, similarity} per duplicate pair here (JSONL)")
	fs.StringVar(&o.pairsMode, "pairs-mode", "spanning", "which pairs --pairs writes: spanning (the pairs that joined two clusters, one per removed document) or all (every verified pair, quadratic in the cluster size); docs/outputs.md")
	fs.StringVar(&o.stats, "stats", "", "write the run summary here as JSON")
	fs.StringVar(&o.report, "report", "", "write a self-contained HTML report of the run here")
	fs.StringVar(&o.tmpDir, "tmp-dir", "", "directory for temporary files and --resume checkpoints (default: the system's)")
	fs.BoolVar(&o.resume, "resume", false, "checkpoint each input file when done, and after an interruption rerun the same command to continue from the checkpoints")
	fs.IntVar(&o.examples, "examples", 3, "how many of the largest clusters the summary shows")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print no summary and draw no progress bars")
	fs.BoolVar(&o.sample, "sample", false, "run on the embedded sample corpus")
	registerDevice(fs, &o.device)
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a Go CPU profile here (for performance work)")
	fs.MarkHidden("cpuprofile")
	fs.StringVar(&o.trace, "trace", "", "write a Go execution trace of the run here, for `go tool trace` (for performance work)")
	fs.MarkHidden("trace")
	fs.StringVar(&o.memProf, "memprofile", "", "write a Go heap profile here, taken when the first pass has read every document (for performance work)")
	fs.MarkHidden("memprofile")
	fs.StringVar(&o.optionsJSON, "options-json", "", "run with the dedup.Options in this JSON file instead of the method, sketch and clustering flags (for bench)")
	fs.MarkHidden("options-json")
	o.input.register(fs)
	o.input.registerWalk(fs)
	o.staged.register(fs)
	return cmd
}

// methodsHelp lists the methods for --method's help.
func methodsHelp() string {
	return strings.Join(dedup.Methods(), ", ")
}

func (o *dedupOpts) config() (dedup.Options, error) {
	var cfg dedup.Options
	method := o.method
	if method == sharedflags.Cascade {
		method = cmp.Or(o.then, sharedflags.DefaultThen)
		if !slices.Contains(sharedflags.CascadeMethods, method) {
			return cfg, usageErr("--then %q: want one of %s", method, strings.Join(sharedflags.CascadeMethods, ", "))
		}
		cfg.Cascade = true
	} else if !slices.Contains(dedup.Methods(), method) {
		return cfg, usageErr("--method: unknown method %q (want one of %s, cascade)", method, methodsHelp())
	}
	cfg.Method = method
	// Checked for every method, though only some compare against it.
	if err := checkUnit01("--threshold", o.sketch.Threshold); err != nil {
		return cfg, err
	}
	var err error
	switch method {
	case "bloom":
		cfg.Spec, err = o.sketch.spec(sketch.Exact)
		cfg.BloomSeed = o.sketch.Seed
	case "bloom-overlap":
		cfg.Spec, err = o.sketch.spec(sketch.Jaccard)
		cfg.BloomSeed = o.sketch.Seed
	default:
		m, perr := sketch.ParseMethod(method)
		if perr != nil {
			return cfg, usageErr("--method: %v", perr)
		}
		cfg.Spec, err = o.sketch.spec(m)
		if m == sketch.SimHash {
			// Not part of the sketch: the exact Jaccard threshold of --verify.
			cfg.VerifyThreshold = o.sketch.Threshold
		}
	}
	if err != nil {
		return cfg, err
	}
	cfg.Verify, cfg.EstimateOnly = o.join.Verify, o.join.EstimateOnly
	if cfg.Cluster, err = cluster.ParseMode(o.clustering); err != nil {
		return cfg, usageErr("--cluster: %s", sharedflags.Plain(err))
	}
	switch o.pairsMode {
	case "spanning", "": // "": commands without the flag (sign)
	case "all":
		cfg.AllPairs = true
	default:
		return cfg, usageErr("--pairs-mode %q: want spanning or all", o.pairsMode)
	}
	cfg.KeyField = o.keyField
	if o.bloomN < 0 {
		return cfg, usageErr("--bloom-n %d: must not be negative", o.bloomN)
	}
	if !(o.bloomFPP > 0 && o.bloomFPP < 1) {
		return cfg, usageErr("--bloom-fpp %v: must be in (0, 1)", o.bloomFPP)
	}
	cfg.BloomN, cfg.BloomFPP, cfg.BloomFile = o.bloomN, o.bloomFPP, o.bloomFile
	cfg.IDFFile, cfg.SaveIDF = o.idfFile, o.saveIDF
	if cfg.Keep, err = o.join.KeepPolicy(); err != nil {
		return cfg, usageErr("%v", err)
	}
	if o.workers < 0 {
		return cfg, usageErr("--workers %d: must not be negative", o.workers)
	}
	cfg.Workers = o.workers
	if o.memory != "" {
		m, err := parseSize(o.memory)
		if err != nil {
			return cfg, usageErr("--memory: %v", err)
		}
		if m < 16<<20 {
			return cfg, usageErr("--memory %s (%.1f MiB): at least 16 MiB (16MiB, 17MB) is needed", o.memory, float64(m)/(1<<20))
		}
		cfg.Memory = m
	}
	cfg.Spill = o.spill
	if err := parseDevice(&cfg, o.device); err != nil {
		return cfg, err
	}
	return cfg, optionErr(cfg.Validate())
}

// optionFlags are the flags that set the fields of dedup.Options and
// dedup.Input that an *dedup.OptionError names.
var optionFlags = map[string]string{
	"Method": "--method", "Spec": "--method", "Spec.Threshold": "--threshold", "VerifyThreshold": "--threshold", "Spec.SimHash.Distance": "--distance",
	"Spec.SimHash.Weights": "--weights", "IDFFile": "--idf", "SaveIDF": "--save-idf", "Verify": "--verify",
	"EstimateOnly": "--estimate-only", "Cluster": "--cluster", "KeyField": "--key-field", "BloomN": "--bloom-n",
	"BloomFPP": "--bloom-fpp", "BloomFile": "--bloom-filter", "BloomSeed": "--seed", "AllPairs": "--pairs-mode", "Workers": "--workers",
	"Keep": "--keep", "Memory": "--memory", "Input.Resume": "--resume", "Input.AgainstIndexes": "--against INDEX",
	"Device": "--device", "Cascade": "--method cascade",
}

// optionErr turns an *dedup.OptionError into a usage error (exit code 2)
// that names the flags of its fields; other errors are returned as they
// are.
func optionErr(err error) error {
	var oe *dedup.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	flag := func(field string) string {
		if f, ok := optionFlags[field]; ok {
			return f
		}
		return field
	}
	name := flag(oe.Field)
	if oe.With != "" {
		name += " with " + flag(oe.With)
	}
	return usageErr("%s: %s", name, oe.Reason())
}

func runDedup(cmd *cobra.Command, o *dedupOpts, args []string, e *env) error {
	if err := checkMethodFlags(cmd.Flags(), o.method); err != nil {
		return err
	}
	cfg, err := o.config()
	if err != nil {
		return err
	}
	if o.optionsJSON != "" {
		if cfg, err = readOptionsJSON(o.optionsJSON); err != nil {
			return err
		}
	}
	if err := distinctOutputs(o); err != nil {
		return err
	}
	ropts, err := o.input.options()
	if err != nil {
		return err
	}
	if o.staged.executor != "" {
		return runStaged(cmd, o, cfg, ropts, args, e)
	}
	if o.staged.work != "" || o.staged.tasks != 0 || cmd.Flags().Changed("task-memory") || o.staged.taskSpill != "" {
		return usageErr("--work, --tasks and --task-memory go with --executor local, slurm or print")
	}
	in := dedup.Input{Options: ropts, SkipInvalid: o.input.skipInvalid, Stdin: e.stdin, Examples: o.examples, Resume: o.resume}
	var savedIndexes []savedIndex // --against indexes, named for the summary
	switch {
	case o.sample && len(args) > 0:
		return usageErr("--sample takes no INPUT")
	case o.sample:
		in.Files, in.Stdin = []string{"-"}, strings.NewReader(string(sample.JSONL))
	case len(args) == 0:
		return usageErr("no INPUT: give files, directories, - for standard input, or --sample")
	default:
		if err := o.input.checkFormatUse(slices.Concat(args, o.against)); err != nil {
			return err
		}
		e, err := expandInputs(args, o.input.exclude)
		if err != nil {
			return err
		}
		in.Files, in.FilesSkipped, in.FilesExcluded = e.Files, e.Skipped, e.Excluded
	}
	if len(o.against) > 0 {
		if slices.Contains(o.against, "-") {
			return usageErr("--against cannot read standard input")
		}
		paths, indexes, closers, named, err := splitAgainst(o.against)
		if err != nil {
			return err
		}
		savedIndexes = named
		for _, n := range named {
			if n.warn != "" {
				fmt.Fprintln(e.stderr, n.warn)
			}
		}
		for _, c := range closers {
			defer c.Close()
		}
		in.AgainstIndexes = indexes
		if len(paths) > 0 {
			e, err := expandFlagInputs("--against", paths, o.input.exclude)
			if err != nil {
				return err
			}
			in.Against = e.Files
		}
	}
	if err := outputsNotInputs(o, in.Files, in.Against); err != nil {
		return err
	}
	if err := checkInputFormats(slices.Concat(in.Files, in.Against), ropts); err != nil {
		return err
	}
	if o.quiet {
		in.Examples = 0
	}
	if o.report != "" {
		in.Examples, in.RandomExamples = max(in.Examples, 10), 10
	}
	out := dedup.Outputs{Kept: o.output, Clusters: o.clusters, Pairs: o.pairs, TmpDir: o.tmpDir}
	var removed removedIDs
	if o.report != "" {
		out.Removed = removed.add
	}
	// The garbage collector's soft memory limit follows the plan
	// (MemoryPlan.GCLimit).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	in.OnPlan = func(p dedup.MemoryPlan) {
		debug.SetMemoryLimit(p.GCLimit())
		if o.memory != "" {
			if w := memoryWarning(p, o.memory); w != "" {
				fmt.Fprintln(e.stderr, w)
			}
		}
	}
	var memProfErr error
	if o.memProf != "" {
		in.OnFirstPass = func() {
			runtime.GC() // the profile's in-use figures are as of the last collection
			f, err := os.Create(o.memProf)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				memProfErr = fmt.Errorf("--memprofile: %w", err)
			}
		}
	}
	stopProf, err := startCPUProfile(o.cpuProf)
	if err != nil {
		return err
	}
	defer stopProf()
	stopTrace, err := startTrace(o.trace)
	if err != nil {
		return err
	}
	defer stopTrace()
	// --stats and --report are written after the other outputs were
	// replaced: a path they cannot be written to is said now, before the
	// run, so that a failed run leaves every output as it was. The other
	// outputs too, so that a mistyped directory is said before the run's
	// work rather than after it.
	if o.output != "" {
		if err := corpus.CheckOutputName(o.output); err != nil {
			return usageErr("-o %s: %v", o.output, err)
		}
	}
	for _, c := range []struct{ flag, path string }{{"-o", o.output}, {"--clusters", o.clusters}, {"--pairs", o.pairs}, {"--stats", o.stats}, {"--report", o.report}} {
		if err := checkDedupOutputPath(c.flag, c.path); err != nil {
			return err
		}
	}
	// Made last, so that no early return above leaves its goroutine.
	in.Progress = newProgress(cmd.Context(), e.stderr, o.quiet)
	stats, err := dedup.Run(cmd.Context(), cfg, in, out)
	err = optionErr(err)
	if err == nil {
		err = memProfErr
	}
	if err != nil {
		return err
	}
	if o.sample {
		stats.Stdin = nil // the embedded corpus, not the user's standard input
	}
	warnDuplicateIDs(e.stderr, stats, o.input.fields.IDField, in.Files)
	if cmd.Flags().Changed("id-field") {
		warnIDsFromPosition(e.stderr, o.input.fields.IDField, stats.IDsFromPosition, stats.Documents, stats.IDsFromPositionFirst)
	}
	if o.stats != "" {
		if err := writeJSONFile(o.stats, stats); err != nil {
			return err
		}
	}
	if o.report != "" {
		if err := writeReportFrom(o.report, cfg, stats, reportSource(o.sample, in.Files), &removed); err != nil {
			return err
		}
	}
	if !o.quiet {
		examples := stats.Examples
		stats.Examples = examples[:min(len(examples), o.examples)]
		printSummary(e.stderr, stats, reportSource(o.sample, in.Files), savedIndexes...)
		printDevice(e.stderr, stats.Device)
		stats.Examples = examples
		if o.report != "" {
			where := o.report
			if abs, err := filepath.Abs(o.report); err == nil && o.report != "-" {
				where = abs
			}
			fmt.Fprintf(e.stderr, "  report: %s (open it in a browser)\n", where)
		}
	}
	if err := allSkipped(int64(stats.Documents), int64(stats.Skipped), stats.SkippedErrors); err != nil {
		return err
	}
	return inputLost(stats.Damaged, o.input.allowTruncated)
}

// distinctOutputs refuses two output flags that name one file (or both
// standard output): each would replace or interleave with the other.
// /dev/null may take any number of them.
func distinctOutputs(o *dedupOpts) error {
	type output struct{ flag, loc string }
	seen := map[string]output{}
	for _, out := range []output{{"-o", o.output}, {"--clusters", o.clusters}, {"--pairs", o.pairs}, {"--stats", o.stats}, {"--report", o.report}} {
		if out.loc == "" || out.loc == os.DevNull {
			continue
		}
		key := out.loc
		if key != "-" && !objstore.IsURL(key) {
			key = filepath.Clean(key)
		}
		key = strings.TrimSuffix(key, "/")
		if was, ok := seen[key]; ok {
			what := "the same file"
			if key == "-" {
				what = "standard output"
			}
			return usageErr("%s %s and %s %s both write to %s: give each its own path", was.flag, was.loc, out.flag, out.loc, what)
		}
		seen[key] = out
	}
	return nil
}

// outputsNotInputs refuses (exit 2) a --clusters, --pairs, --stats or
// --report that names an input file or an --against file: the run would
// replace the corpus with its clusters. -o may name its input (the kept
// records replace it, atomically, once the run has read it).
func outputsNotInputs(o *dedupOpts, files, against []string) error {
	return outputsNotReads([]outputFlag{{"--clusters", o.clusters}, {"--pairs", o.pairs}, {"--stats", o.stats}, {"--report", o.report}},
		inputFile{"an input file", files}, inputFile{"an --against file", against})
}

// outputFlag is an output file's flag and path.
type outputFlag struct{ flag, path string }

// inputFile is files a command reads, and what they are to the user ("an
// input file", "the --truth file").
type inputFile struct {
	what  string
	files []string
}

// outputsNotReads refuses (exit 2) an output that names a file the
// command reads (sign -o, index query -o, tune --table naming an input or
// the truth): the run would replace it with what it writes.
func outputsNotReads(outputs []outputFlag, reads ...inputFile) error {
	type output struct {
		outputFlag
		st os.FileInfo
	}
	var outs []output // the existing regular files among them
	for _, out := range outputs {
		if out.path == "" || out.path == "-" || objstore.IsURL(out.path) {
			continue
		}
		if st, err := os.Stat(out.path); err == nil && st.Mode().IsRegular() {
			outs = append(outs, output{out, st})
		}
	}
	if len(outs) == 0 {
		return nil
	}
	for _, r := range reads {
		for _, f := range r.files {
			if f == "-" || objstore.IsURL(f) {
				continue
			}
			ist, err := os.Stat(f) // once an input, whatever the outputs
			if err != nil {
				continue
			}
			for _, out := range outs {
				if os.SameFile(out.st, ist) {
					return usageErr("%s %s is %s: the run would replace it; give the output another path", out.flag, out.path, r.what)
				}
			}
		}
	}
	return nil
}

// checkOutputPath says whether the output file path of flag can be
// written, by creating its temporary file and removing it. Standard
// output and special files (a pipe, /dev/null), opened only when written,
// are not checked.
func checkOutputPath(flag, path string) error {
	return checkOutputPathNote(flag, path, "")
}

// checkDedupOutputPath is checkOutputPath for the outputs of dedup, whose
// -o, --clusters and --pairs are folders with --executor: a folder given
// without it is told so.
func checkDedupOutputPath(flag, path string) error {
	note := ""
	if flag == "-o" || flag == "--clusters" || flag == "--pairs" {
		note = " (folders of part-NNNNN.jsonl files are the outputs of dedup --executor)"
	}
	return checkOutputPathNote(flag, path, note)
}

// checkOutputPathNote is checkOutputPath with note added to the words for
// a folder given as the file.
func checkOutputPathNote(flag, path, note string) error {
	if path == "" || path == "-" {
		return nil
	}
	// A folder is a usage error, as a file is for the folder outputs of a
	// staged run (checkOutputFolders).
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return usageErr("%s %s: a folder; %s is a file: give a file's path%s", flag, path, flag, note)
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return nil
	}
	if msg := fileInTheWay(flag, path); msg != "" {
		return errors.New(msg)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return outputErr(flag, path, err)
	}
	return f.Abort()
}

// fileInTheWay says that the output path of flag lies under a file, or
// returns "" when it does not: the job makes the missing folders of its
// outputs, but none inside a file.
func fileInTheWay(flag, path string) string {
	if f := fileAbove(path); f != "" {
		return fmt.Sprintf("%s %s: %s is a file, not a folder: give the output another path", flag, path, f)
	}
	return ""
}

// fileAbove returns the nearest existing folder above path when it is not
// a folder (a file, say), else "".
func fileAbove(path string) string {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err == nil {
			if st.IsDir() {
				return ""
			}
			return dir
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// outputErr names the flag of an output that cannot be created: "-o
// out/k.jsonl: the directory out does not exist", without repeating the
// path that the flag already gives.
func outputErr(flag, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "create" && pe.Path == path {
		return fmt.Errorf("%s %s: %w", flag, path, pe.Err)
	}
	return fmt.Errorf("%s %s: %w", flag, path, err)
}

// writeJSONFile writes v as indented JSON, atomically.
func writeJSONFile(path string, v any) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	return f.Commit()
}

// printSummary writes the run's summary for people (--stats has it as
// JSON): what was read, what was kept and removed, the parameters, the
// time and memory, and example clusters. Each part is one call below; a
// new line goes where it reads best.
// printSummary writes the summary of a run; indexes names each saved index
// of --against with the parameters it compares by.
func printSummary(w io.Writer, s *dedup.Stats, source string, indexes ...savedIndex) {
	method := s.Method
	if s.Cascade {
		method = "cascade --then " + s.Method
	}
	fmt.Fprintf(w, "neardup dedup --method %s: %s from %s\n", method, plural(s.Documents, "document"), source)
	sw := summaryWriter{w}
	sw.outcome(s)
	sw.savedIndexes(indexes)
	sw.params(s.Params.Map())
	sw.times(s)
	sw.memory(s)
	sw.examples(s.Examples)
}

// summaryWriter writes the parts of the dedup summary, two spaces in.
type summaryWriter struct{ w io.Writer }

// savedIndexes names each saved index of --against and the parameters it
// matches by: its own, fixed at its creation, which may not be the run's.
func (sw summaryWriter) savedIndexes(indexes []savedIndex) {
	for _, ix := range indexes {
		sw.line("the saved index %s matches by its own parameters: %s", ix.loc, ix.params)
	}
}

func (sw summaryWriter) line(format string, args ...any) {
	fmt.Fprintf(sw.w, "  "+format+"\n", args...)
}

// outcome: kept and removed, clusters and pairs, and what else the run
// counted.
func (sw summaryWriter) outcome(s *dedup.Stats) {
	pct := 0.0
	if s.Documents > 0 {
		pct = 100 * float64(s.Removed) / float64(s.Documents)
	}
	sw.line("kept %s, removed %s (%.1f%%)", number(s.Kept), number(s.Removed), pct)
	// With --against the sizes count this input's documents only: a
	// cluster of one new document and the old one it duplicates has 1.
	largest := plural(s.LargestCluster, "document")
	if s.Against > 0 {
		largest += " of this input; old documents are not counted"
	}
	switch s.Clusters {
	case 0:
		sw.line("no cluster with duplicates")
	case 1:
		sw.line("1 cluster with duplicates (%s); %s", largest, plural(s.Pairs, "duplicate pair"))
	default:
		sw.line("%s clusters with duplicates (the largest has %s); %s", number(s.Clusters),
			largest, plural(s.Pairs, "duplicate pair"))
	}
	if s.Cascade {
		sw.line("%s %s, %s (the exact stage joined the copies without sketching them)",
			number(s.ExactCopies), agree(s.ExactCopies, "exact copy", "exact copies"), plural(s.Removed-s.ExactCopies, "near duplicate"))
	}
	if n := s.RemovedBelowThreshold; n != nil && *n > 0 {
		far := "below the threshold to"
		if s.Method == "simhash" && (s.Params.Verify == nil || !*s.Params.Verify) {
			far = "beyond the distance from"
		}
		sw.line("%s %s %s the kept document of the cluster (joined through chains of pairs; --cluster leader removes none such)", plural(*n, "removed document"), agree(*n, "is", "are"), far)
	}
	if s.Dropped > 0 {
		sw.line("%s removed %s the method does not name (no pairs line)", plural(s.Dropped, "document"),
			agree(s.Dropped, "as a copy of an earlier document", "as copies of an earlier document"))
	}
	if s.Resumed > 0 {
		sw.line("resumed %s from checkpoints", plural(s.Resumed, "input file"))
	}
	if s.Against > 0 {
		sw.line("compared against %s of the old corpus (never removed)", plural(s.Against, "document"))
	}
	if s.IndexMatches > 0 {
		sw.line("%s found in the saved index (removed with their clusters)", plural(s.IndexMatches, "document"))
	}
	sw.skipped(s)
	if s.Empty > 0 {
		sw.line("%s empty after normalisation (kept, never duplicates)", plural(s.Empty, "document"))
	}
	printInputNotes(sw.w, s)
	if s.Traditional > 0 {
		sw.line("%s %s Traditional Chinese characters: --t2s compares texts in Simplified form, which joins a Traditional text to a Simplified copy of it if there is one (this run did not check)", plural(s.Traditional, "document"), agree(s.Traditional, "holds", "hold"))
	}
	if s.HTMLLike > 0 {
		sw.line("%s %s like HTML pages (<!DOCTYPE html> or <html>): --html compares their main content, without the markup and the site's template (this run compared the markup too)", plural(s.HTMLLike, "document"), agree(s.HTMLLike, "starts", "start"))
	}
	if s.HTMLNoMainContent > 0 {
		sw.line("%s %s no main content that --html could find: compared on the whole visible text, template included, or empty", plural(s.HTMLNoMainContent, "HTML document"), agree(s.HTMLNoMainContent, "has", "have"))
	}
	if s.AbandonedFiles > 0 {
		sw.line("removed %s (%s) that killed earlier runs left behind", plural(s.AbandonedFiles, "temporary file"), formatSize(s.AbandonedBytes))
	}
}

// skipped: the invalid records skipped (--skip-invalid) and the first
// ones.
func (sw summaryWriter) skipped(s *dedup.Stats) {
	if s.Skipped > 0 {
		sw.line("skipped %s", plural(s.Skipped, "invalid record"))
		for _, e := range s.SkippedErrors {
			sw.line("  skipped: %s", e)
		}
	}
}

// params: the method's parameters as it describes them, one per line,
// sorted by name.
func (sw summaryWriter) params(params map[string]any) {
	if len(params) == 0 {
		return
	}
	keys := slices.Sorted(maps.Keys(params))
	width := 0
	for _, k := range keys {
		width = max(width, len(k))
	}
	sw.line("parameters:")
	for _, k := range keys {
		var v string
		switch x := params[k].(type) {
		case int:
			v = number(x)
		case int64:
			v = number(int(x))
		case uint64:
			v = number(int(x))
		case float64:
			v = strconv.FormatFloat(x, 'g', 4, 64)
			if x == math.Trunc(x) && math.Abs(x) < 1e15 {
				v = number(int(x))
			}
		case bool:
			v = map[bool]string{true: "yes", false: "no"}[x]
		default:
			v = fmt.Sprint(x)
		}
		sw.line("  %-*s  %s", width, strings.ReplaceAll(k, "_", " "), v)
	}
}

// times: each stage's time, with its rates when it read the input.
func (sw summaryWriter) times(s *dedup.Stats) {
	var total float64
	parts := make([]string, 0, len(s.Stages))
	for _, st := range s.Stages {
		total += st.Seconds
		part := fmt.Sprintf("%s %.3f s", st.Name, st.Seconds)
		if st.Bytes > 0 {
			// The rates from the unrounded time, none for a stage under
			// a millisecond (it printed "0 docs/s" and "0.0 MB/s" for a
			// tiny input).
			d := time.Duration(st.Seconds * float64(time.Second))
			if r := docsRate(st.Documents, d); r != "" {
				part += fmt.Sprintf(" (%s, %s MB/s, %.1f CPU-s)", r, rateNumber(float64(st.Bytes)/1e6/st.Seconds), st.CPUSeconds)
			} else {
				part += fmt.Sprintf(" (%.1f CPU-s)", st.CPUSeconds)
			}
		}
		parts = append(parts, part)
	}
	sw.line("time %.3f s with %s: %s", total, plural(s.Workers, "worker"), strings.Join(parts, ", "))
}

// memory: the plan made before the run, and the peak.
func (sw summaryWriter) memory(s *dedup.Stats) {
	m := s.Memory
	how := "in memory"
	switch {
	case m.Spill:
		how = "spilling bucket keys to disk"
	case m.EstimatedBytes > m.BudgetBytes && s.Params.Cluster == "leader":
		how = "in memory (leader clustering cannot spill)"
	case m.EstimatedBytes > m.BudgetBytes:
		how = "in memory (this method cannot spill)"
	}
	sw.line("memory: estimated %s live and %s at peak for about %s, budget %s, %s; peak RSS %s",
		formatSize(m.EstimatedBytes), formatSize(m.EstimatedPeakBytes), plural(int(m.EstimatedDocs), "document"), formatSize(m.BudgetBytes), how, formatSize(s.PeakRSSBytes))
}

// examples: the example clusters, kept document first.
func (sw summaryWriter) examples(examples []dedup.Example) {
	for i, ex := range examples {
		sw.line("cluster %d:", i+1)
		if ex.Index != "" {
			sw.line("  kept    %s (in the saved index)", human.Pad(shownID(ex.Index), 22))
		}
		for _, m := range ex.Members {
			mark := "removed"
			if m.Kept {
				mark = "kept   "
			}
			// Columns, not runes: a Chinese id or text takes two a
			// character.
			sw.line("  %s %s %s", mark, human.Pad(shownID(m.ID), 22), clip(m.Text, 70))
		}
	}
}

// plural is n (with thousands separators) and noun, with an s unless n is 1.
func plural(n int, noun string) string { return human.Plural(n, noun) }

// agree returns one when n is 1 and many otherwise: the words that agree
// with a count.
func agree(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// number writes n with commas between thousands: 1,234,567.
func number[T int | int64](n T) string { return report.Number(n) }

// shownID is a document id as the summary prints it (human.ID): quoted
// when it holds a control or invisible character.
func shownID(id string) string { return human.ID(id) }

// clip shortens s to at most n terminal columns on one line (human.Clip:
// a Chinese character takes two); a control character (an escape
// sequence's ESC, say) is shown as U+FFFD, so that the text cannot drive
// the terminal.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return utf8.RuneError
		}
		return r
	}, s)
	return human.Clip(s, n)
}

// readOptionsJSON reads dedup.Options written by writeOptionsJSON.
func readOptionsJSON(path string) (dedup.Options, error) {
	var cfg dedup.Options
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, usageErr("--options-json: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, usageErr("--options-json %s: %v", path, err)
	}
	return cfg, optionErr(cfg.Validate())
}

// writeOptionsJSON writes cfg as JSON to path, with its Spec resolved (a
// sketch.Spec serialises only when valid for its method).
func writeOptionsJSON(path string, cfg dedup.Options) error {
	spec, err := cfg.ResolveSpec()
	if err != nil {
		return err
	}
	cfg.Spec = spec
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// warnDuplicateIDs warns, even with -q, when documents share an id: the
// outputs name documents by id, and --clusters then has several lines for
// one id.
// A web archive's record is named by its page's address, which a crawl
// that fetched a page twice repeats: the advice is then the header that
// names each record, not a JSON field.
func warnDuplicateIDs(w io.Writer, s *dedup.Stats, idField string, files []string) {
	if s.DuplicateIDs == 0 {
		return
	}
	if idField == "id" && slices.ContainsFunc(files, corpus.IsWebArchive) {
		fmt.Fprintln(w, duplicateIDsWarning("neardup", "--clusters, --pairs", s.DuplicateIDs, s.DuplicateIDsFirst,
			"a web archive's record is named by its page's address (WARC-Target-URI), which repeats when a page was fetched more than once: pass --id-field WARC-Record-ID to name WARC records by their own ids (ARC records have none)"))
		return
	}
	web := slices.ContainsFunc(files, corpus.IsWebArchive)
	other := slices.ContainsFunc(files, func(f string) bool { return !corpus.IsWebArchive(f) })
	fmt.Fprintln(w, duplicateIDsWarning("neardup", "--clusters, --pairs", s.DuplicateIDs, s.DuplicateIDsFirst, idFieldFix(idField, web, other || len(files) == 0)))
}

// warnIDsFromPosition warns, even with -q, that an --id-field given on
// the command line was missing (or empty) in n of the documents read,
// whose ids fell back to their FILE:LINE (first: the first of them): a
// misspelt field name would otherwise go unnoticed until the outputs.
func warnIDsFromPosition(w io.Writer, field string, n, documents int, first string) {
	if n == 0 {
		return
	}
	fmt.Fprintf(w, "neardup: warning: %s of %s had no --id-field %q (or an empty one), the first %s: their ids are FILE:LINE (FILE:RECORD)\n",
		number(n), plural(documents, "document"), field, first)
}

// countNoun is "1 id is" or "3 ids are": n and the singular or plural.
func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return number(n) + " " + many
}

// memoryWarning says, before the run, that the budget --memory flag gave
// cannot be kept: the plan's estimated peak is above it (the runtime
// alone takes tens of MiB, and the in-memory methods cannot spill). ""
// when it can.
func memoryWarning(p dedup.MemoryPlan, flag string) string {
	if p.EstimatedPeakBytes <= p.BudgetBytes {
		return ""
	}
	how := "spilling to disk"
	if !p.Spill {
		how = "in memory"
		if !p.SpillSupported {
			how += ", as this method cannot spill"
		}
	}
	return fmt.Sprintf("neardup: warning: --memory %s (%s) cannot be kept: this run is estimated to take %s at its peak, %s; it goes on, and the summary gives the peak measured (a budget of at least %s would be kept)",
		flag, formatSize(p.BudgetBytes), formatSize(p.EstimatedPeakBytes), how, formatSize(p.EstimatedPeakBytes))
}
