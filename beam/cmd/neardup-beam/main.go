// Command neardup-beam runs neardup's batch deduplication as an Apache
// Beam pipeline (package pipeline) on Prism (in-process, the default), or
// on a job server: Prism, Flink or Spark (--runner universal, flink or
// spark with --endpoint HOST:PORT), or Dataflow (--runner dataflow with
// Beam's Dataflow flags). The sketch, threshold, keep and record-field
// flags are those of `neardup dedup`, declared by the same code
// (internal/sharedflags): the same names, defaults and help.
//
//	neardup-beam --input 'shards/*.jsonl.zst' --output out/ [flags]
//
// Exit codes: 0 success, 1 the run failed, 2 usage error, 3 invalid input
// data (a bad record or a damaged file, named with its line and document
// id as `neardup dedup` names it, exit code 3 there too).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/neardup/neardup/beam/pipeline"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/cli"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/internal/suggest"
	"github.com/neardup/neardup/sketch"
)

// Exit codes.
const (
	exitFailure     = 1
	exitUsage       = 2
	exitInvalidData = 3 // neardup dedup's ExitInvalidData
)

// inputs is the repeatable --input flag.
type inputs []string

func (i *inputs) String() string     { return strings.Join(*i, ",") }
func (i *inputs) Set(s string) error { *i = append(*i, s); return nil }

type options struct {
	in                      inputs
	output, method, idf     string
	format                  string // --format: of the files whose names give none
	then                    string // --method cascade's near method
	roundsPerJob, maxRounds int
	joinMemory              string
	pairs, skipInvalid      bool
	quiet, verbose          bool
	sketch                  sharedflags.Sketch // the sketch flags of neardup dedup
	join                    sharedflags.Join   // --verify, --estimate-only, --keep
	fields                  sharedflags.Fields // --text-field, --id-field, --max-doc-bytes
	runner                  *string
}

// register defines the flags on fs (Beam's own flags, such as --endpoint,
// --environment_type, --project or --region, live on the same set). The
// flags neardup dedup has too are declared by package sharedflags, with
// dedup's names, defaults and help.
func (o *options) register(fs *flag.FlagSet) {
	fs.Var(&o.in, "input", "input file or glob (repeatable): JSONL (.jsonl, .json, .ndjson, optionally .gz or .zst) or Parquet, local or gs:// s3://; a file whose name gives no format with --format")
	fs.StringVar(&o.format, "format", "", "format of the input files whose names give none (data.zst, corpus.data): jsonl or txt (one document per line); other files go by their names")
	fs.StringVar(&o.output, "output", "", "output directory: clusters-*.jsonl, kept-*.jsonl.zst, pairs-*.jsonl (--pairs), stats.json")
	if f := fs.Lookup("runner"); f == nil {
		o.runner = fs.String("runner", "prism", "Beam runner: prism (in-process, or a Prism job server with --endpoint), universal, flink, spark (with --endpoint HOST:PORT of a job server) or dataflow")
	}
	fs.StringVar(&o.method, "method", sketch.MinHash.String(), "minhash, simhash, exact, ksentence, or cascade: exact copies first, then --then on the rest (the clusters of --method THEN alone, without sketching a file's copies)")
	fs.StringVar(&o.then, "then", sharedflags.DefaultThen, "--method cascade: the near-duplicate method after the exact stage: minhash or simhash (its flags apply)")
	o.sketch.Register(fs, sharedflags.All)
	o.join.Register(fs)
	fs.StringVar(&o.idf, "idf", "", "simhash --weights tfidf: the IDF table to use (a local path every worker can read)")
	fs.BoolVar(&o.pairs, "pairs", false, "write pairs-*.jsonl: {id1, id2, similarity} per duplicate pair found")
	o.fields.Register(fs)
	fs.Var(&o.fields.MaxDocBytes, "max-doc-bytes", sharedflags.MaxDocBytesUsage)
	fs.BoolVar(&o.skipInvalid, "skip-invalid", false, "skip bad records (counted and reported) instead of stopping with exit code 3")
	fs.StringVar(&o.joinMemory, "join-memory", fmt.Sprintf("%dMiB", pipeline.DefaultJoinMemory>>20), "bytes of documents (ids and sketches) one join holds in memory; a join of more (a giant component) writes its sketches to a scratch file on the worker's local disk and is joined from it, and one that needs more than this even so fails, naming the value it needs (0: no limit)")
	fs.IntVar(&o.roundsPerJob, "rounds-per-job", 4, "connected-components rounds per Beam job")
	fs.IntVar(&o.maxRounds, "max-rounds", 200, "stop with an error when the components have not converged after this many rounds")
	fs.BoolVar(&o.quiet, "quiet", false, "print no summary")
	fs.BoolVar(&o.verbose, "verbose", false, "show the Beam runner's and workers' logs and a failed job's whole error chain (otherwise only warnings, and the failing record's own error)")
}

// parsed checks the flags of fs, parsed into o, and turns them into
// dedup.Options (config). A flag that only other methods read, given
// explicitly, is refused as neardup dedup refuses it
// (sharedflags.CheckMethodFlags): `--method simhash --num-perm 256` would
// otherwise run simhash as if --num-perm had not been given.
func (o *options) parsed(fs *flag.FlagSet) (dedup.Options, error) {
	if err := sharedflags.CheckMethodFlags(sharedflags.StdFlags(fs), o.method); err != nil {
		return dedup.Options{Method: o.method}, err
	}
	return o.config()
}

// config turns the flags into dedup.Options, as `neardup dedup` does: the
// method's sketch.Spec from the sketch flags (sharedflags.Sketch.Spec, the
// checks of neardup dedup), the join and keep options.
func (o *options) config() (dedup.Options, error) {
	cfg := dedup.Options{Method: o.method}
	if o.method == sharedflags.Cascade {
		if o.then != "minhash" && o.then != "simhash" {
			if o.then == "jaccard" {
				return cfg, fmt.Errorf("--method cascade --then jaccard: the Beam pipeline runs the cascade before minhash or simhash only (jaccard's candidates are not bucket keys): run neardup dedup --method cascade --then jaccard in one process")
			}
			return cfg, fmt.Errorf("--then %q: want minhash or simhash (exact alone is --method exact)", o.then)
		}
		cfg.Method, cfg.Cascade = o.then, true
	}
	m, err := sketch.ParseMethod(cfg.Method)
	if err != nil {
		if o.method == "bloom" || o.method == "bloom-overlap" {
			return cfg, nil // a method of neardup dedup: the pipeline says why it cannot run it
		}
		return cfg, fmt.Errorf("--method %q: want minhash, simhash, exact or ksentence", o.method)
	}
	if err := sharedflags.CheckUnit01("--threshold", o.sketch.Threshold); err != nil {
		return cfg, err
	}
	if err := o.fields.Check(); err != nil {
		return cfg, err
	}
	if cfg.Spec, err = o.sketch.Spec(m); err != nil {
		return cfg, err
	}
	if m == sketch.SimHash && o.join.Verify {
		cfg.VerifyThreshold = o.sketch.Threshold
	}
	cfg.IDFFile = o.idf
	cfg.Verify, cfg.EstimateOnly = o.join.Verify, o.join.EstimateOnly
	if cfg.Keep, err = o.join.KeepPolicy(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	var o options
	fs := flag.CommandLine
	fs.SetOutput(stderr)
	// The flags defined already are Beam's (runners, environments,
	// Dataflow); -help lists ours and names theirs.
	beamFlags := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { beamFlags[f.Name] = true })
	o.register(fs)
	helpBeam := fs.Bool("help-beam", false, "list Beam's own flags too (runners, environments, Dataflow)")
	// A mistyped flag gets its error and one line, not the whole list:
	// the errors come back here (not os.Exit) and are printed below.
	fs.Init(fs.Name(), flag.ContinueOnError)
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(stderr, fs, beamFlags)
			return 0
		}
		fmt.Fprintf(stderr, "neardup-beam: %v%s\nRun 'neardup-beam -help' for the flags.\n", err, flagSuggestion(fs, err))
		return exitUsage
	}
	if *helpBeam {
		fs.PrintDefaults()
		return 0
	}
	if !o.verbose {
		beamlog.LogLevel = "warn" // Prism in-process and the workers' logs
	}
	// Workers started by a runner (Dataflow, or a job server's PROCESS or
	// DOCKER environment) run this binary with Beam's worker flags:
	// beam.Init serves them and exits.
	beam.Init()
	if !o.verbose {
		// beam.Init set slog's default logger, through which Prism
		// in-process logs a failed bundle's whole plan at level ERROR
		// before the job fails. The failure comes back as Run's error,
		// printed below without the plan: above ERROR only, unless
		// -verbose.
		slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError + 4})))
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "neardup-beam: unexpected arguments %q (inputs go in --input)\n", fs.Args())
		return exitUsage
	}
	cfg, err := o.parsed(fs)
	if err != nil {
		fmt.Fprintf(stderr, "neardup-beam: %v\n", err)
		return exitUsage
	}
	joinMemory, err := sharedflags.ParseSize(o.joinMemory)
	if err != nil {
		fmt.Fprintf(stderr, "neardup-beam: --join-memory: %v\n", err)
		return exitUsage
	}
	if joinMemory == 0 {
		joinMemory = -1 // no limit
	}
	runner := fs.Lookup("runner").Value.String()
	if runner == "" {
		runner = "prism"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	opts := pipeline.Options{Inputs: o.in, Output: o.output, Config: cfg, TextField: o.fields.TextField, IDField: o.fields.IDField,
		MaxDocBytes: int(o.fields.MaxDocBytes), StreamFormat: o.format, SkipInvalid: o.skipInvalid, Pairs: o.pairs, Runner: runner, RoundsPerJob: o.roundsPerJob, MaxRounds: o.maxRounds, JoinMemory: joinMemory}
	if !o.quiet {
		opts.Log = func(format string, args ...any) { fmt.Fprintf(stderr, "neardup-beam: "+format+"\n", args...) }
	}
	st, err := pipeline.Run(ctx, opts)
	if err != nil {
		var bad *pipeline.InvalidDataError
		switch {
		case o.verbose:
			fmt.Fprintf(stderr, "neardup-beam: %v\n", err)
		case errors.As(err, &bad):
			fmt.Fprintf(stderr, "neardup-beam: %s (-verbose prints the runner's whole error)\n", bad.Record)
		default:
			fmt.Fprintf(stderr, "neardup-beam: %s\n", rootCause(err))
		}
		if bad != nil && bad.Hint != "" {
			fmt.Fprintf(stderr, "hint: %s\n", bad.Hint)
		}
		switch {
		case errors.Is(err, pipeline.ErrUsage):
			return exitUsage
		case errors.Is(err, pipeline.ErrInvalidData):
			return exitInvalidData
		}
		return exitFailure
	}
	warnDuplicateIDs(stderr, st, o.fields.IDField)
	if !o.quiet {
		fmt.Fprintf(stderr, "neardup-beam: %d documents, %d kept, %d removed, %d clusters (largest %d), %d components rounds, %d jobs, %.0f shuffle bytes/document, %.1f s\n",
			st.Documents, st.Kept, st.Removed, st.Clusters, st.LargestCluster, st.Rounds, st.Jobs, st.ShufflePerDoc, st.Seconds)
		// neardup dedup's summary lines of --skip-invalid.
		if st.Skipped > 0 {
			noun := "invalid records"
			if st.Skipped == 1 {
				noun = "invalid record"
			}
			fmt.Fprintf(stderr, "neardup-beam: skipped %d %s\n", st.Skipped, noun)
			for _, e := range st.SkippedErrors {
				fmt.Fprintf(stderr, "neardup-beam:   skipped: %s\n", e)
			}
		}
	}
	return 0
}

// warnDuplicateIDs warns, even with -quiet, when documents share an id,
// in `neardup dedup`'s words: the outputs name documents by id, and
// clusters-*.jsonl then has several lines for one id.
func warnDuplicateIDs(w io.Writer, st *pipeline.Stats, idField string) {
	if st.DuplicateIDs == 0 {
		return
	}
	fmt.Fprintln(w, cli.DuplicateIDsWarning("neardup-beam", "clusters-*.jsonl, pairs-*.jsonl", int(st.DuplicateIDs), st.DuplicateIDsFirst, idField))
}

// ourHelp replaces Beam's text for flags that mean something else here.
var ourHelp = map[string]string{
	"endpoint": "job server HOST:PORT for --runner universal, flink or spark, or a Prism job server (Prism in-process, the default, needs none)",
}

// printHelp lists neardup-beam's flags, and names Beam's own (which
// -help-beam lists), so that ours are not lost among about 50 of theirs.
func printHelp(w io.Writer, fs *flag.FlagSet, beamFlags map[string]bool) {
	fmt.Fprintln(w, "usage: neardup-beam --input GLOB --output DIR [flags]")
	fmt.Fprintln(w, "\nneardup dedup as an Apache Beam pipeline (docs/beam.md). Flags:")
	var theirs []string
	fs.VisitAll(func(f *flag.Flag) {
		help, ok := ourHelp[f.Name]
		if !ok && beamFlags[f.Name] && f.Name != "runner" {
			theirs = append(theirs, "-"+f.Name)
			return
		}
		if !ok {
			help = f.Usage
		}
		fmt.Fprintf(w, "  -%s\n    \t%s%s\n", f.Name, help, defaultNote(f))
	})
	fmt.Fprintf(w, "\nBeam's own flags (%d, for runners, environments and Dataflow, e.g. -environment_type, -project, -region, -staging_location): -help-beam lists them.\n", len(theirs))
}

// defaultNote is " (default X)" for a flag whose default is not its zero
// value, written as neardup's help writes it (a string quoted), so that a
// flag of both reads the same in both.
func defaultNote(f *flag.Flag) string {
	if f.DefValue == "" || f.DefValue == "false" || f.DefValue == "0" {
		return ""
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, ok := g.Get().(string); ok {
			return fmt.Sprintf(" (default %q)", f.DefValue)
		}
	}
	return fmt.Sprintf(" (default %s)", f.DefValue)
}

// flagSuggestion returns " (did you mean -X?)" for the flag that err says
// is not defined when fs has one within two edits of it, else "".
func flagSuggestion(fs *flag.FlagSet, err error) string {
	_, name, ok := strings.Cut(err.Error(), "flag provided but not defined: ")
	if !ok {
		return ""
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	best := suggest.Nearest(name, names, 2)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean -%s?)", best)
}

// rootCause is what a user needs of a job's error: Beam wraps a DoFn's
// error (a bad record, an unreadable file) in the runner's and the SDK
// harness's messages, with the bundle's whole plan, several kB; the
// DoFn's own message comes last, after the last "caused by:". The whole
// error is printed with -verbose.
func rootCause(err error) string {
	msg := err.Error()
	const by = "caused by:\n"
	i := strings.LastIndex(msg, by)
	if i < 0 {
		return msg
	}
	cause := strings.TrimSpace(msg[i+len(by):])
	// "DoFn[UID:16, PID:e4, Name: .../pipeline.readFn] failed:\n<ours>"
	if strings.HasPrefix(cause, "DoFn[") {
		if _, rest, ok := strings.Cut(cause, "failed:\n"); ok {
			cause = strings.TrimSpace(rest)
		}
	}
	if cause == "" {
		return msg
	}
	return cause + " (-verbose prints the runner's whole error)"
}
