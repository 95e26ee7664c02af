package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/sysinfo"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
	"github.com/neardup/neardup/tune"
)

// benchMethods are the methods bench runs by default, cheapest first.
var benchMethods = []string{"exact", "bloom", "ksentence", "simhash", "minhash", "jaccard"}

// benchDatasets are the labelled sets of ../shared/data, smallest first.
var benchDatasets = []string{"clough-plagiarism", "llvm-docs", "tang-editions", "bible-zh-scripts", "bible-distant", "bible-kjv-family"}

// benchProfile is how bench runs the methods on one dataset: the
// normalisation, shingling and threshold its README calls for, and
// per-method settings.
type benchProfile struct {
	// about says why, for the document.
	about string
	// config returns the configuration of method on the dataset (the
	// "readme" profile).
	config func(method string) dedup.Options
	// tuned changes config(method) into the "tuned" profile: the best
	// configuration `neardup tune` found on a sample of the dataset
	// (docs/defaults.md has the sweeps). A method without an entry runs
	// only in the readme profile.
	tuned map[string]func(c *dedup.Options)
	// tunedAbout says where the tuned profile comes from.
	tunedAbout string
	// noTunedJaccard leaves out jaccard's tuned row, which otherwise
	// takes minhash's tuned shingling and threshold (the exact join is
	// the reference of what minhash estimates).
	noTunedJaccard bool
	// refVersion, when set, adds the recall of the pairs (refVersion/X,
	// V/X) per version V, where ids are "VERSION/KEY".
	refVersion string
	// pairs names a pairs file of the dataset scored per label, with the
	// labels that count as duplicates.
	pairs    string
	positive []string
	// subset, when set, adds scores over the truth documents it accepts.
	subset     func(id string) bool
	subsetName string
}

// tunedFunc returns the change of method's configuration into the tuned
// profile, nil when the method has no tuned row.
func (p benchProfile) tunedFunc(method string) func(c *dedup.Options) {
	if method != "jaccard" {
		return p.tuned[method]
	}
	mh := p.tuned["minhash"]
	if mh == nil || p.noTunedJaccard {
		return nil
	}
	return func(c *dedup.Options) {
		mhSpec := c.Spec.MinHash
		mh(c)
		c.Spec.MinHash = mhSpec // the shingling and threshold only
	}
}

// profileConfig returns a configuration builder from the dataset-wide
// settings and per-method changes.
func profileConfig(setup func(c *dedup.Options), perMethod map[string]func(c *dedup.Options)) func(string) dedup.Options {
	return func(method string) dedup.Options {
		c := dedup.Options{}
		c.Method = method
		if setup != nil {
			setup(&c)
		}
		if f := perMethod[method]; f != nil {
			f(&c)
		}
		return c
	}
}

// benchProfiles holds the profiles of the labelled sets; a dataset not
// listed runs with the zero dedup.Options (every default).
var benchProfiles = map[string]benchProfile{
	"clough-plagiarism": {
		about: "word 3-grams at Jaccard 0.3: answers are much shorter than the originals, so J is capped well below 1 even for copying (README); truth: orig+cut+light together",
		config: profileConfig(func(c *dedup.Options) {
			c.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 3}
			c.Spec.Threshold = 0.3
		}, nil),
		pairs: "pairs.tsv", positive: []string{"cut", "light"},
		tunedAbout: "neardup tune on the whole set (100 documents); jaccard uses minhash's shingling and threshold, as the reference",
		tuned: map[string]func(c *dedup.Options){
			"ksentence": func(c *dedup.Options) { c.Spec.KSentence.K = 1 },
			"simhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.SimHash.Weights, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance = shingle.Options{Unit: shingle.Char, N: 3}, sketch.WeightCount, 64, 8
			},
			"minhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.Threshold, c.Spec.MinHash.NumPerm = shingle.Options{Unit: shingle.Char, N: 4}, 0.4, 64
			},
		},
	},
	"llvm-docs": {
		about: "--html (scripts, styles and markup dropped), word 5-grams at 0.8 (README: pairs.tsv uses word 5-grams of the visible text)",
		config: profileConfig(func(c *dedup.Options) {
			c.Spec.Normalize = normalizeWith(func(o *text.Options) { o.HTML = true })
			c.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 5}
			c.Spec.Threshold = 0.8
		}, nil),
		pairs: "pairs.tsv", positive: []string{"1"},
		subset:     func(id string) bool { _, p, _ := strings.Cut(id, "/"); return !strings.HasPrefix(p, "AMDGPU/") },
		subsetName: "non-AMDGPU pages (README's clean evaluation)",
		tunedAbout: "neardup tune with the non-AMDGPU truth (742 pages scored, all 3,053 pages as input); jaccard uses minhash's shingling and threshold",
		tuned: map[string]func(c *dedup.Options){
			"ksentence": func(c *dedup.Options) { c.Spec.KSentence.K = 3 },
			"simhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.SimHash.Weights, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance = shingle.Options{Unit: shingle.Word, N: 3}, sketch.WeightCount, 128, 12
			},
			"minhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.Threshold, c.Spec.MinHash.NumPerm = shingle.Options{Unit: shingle.Word, N: 8}, 0.8, 128
			},
		},
	},
	"tang-editions": {
		about: "--t2s (the editions mix variant forms), CJK character bigrams (unit word: ideographs one by one, punctuation folded) at 0.5: the truth is defined on character-bigram J and a fifth of its pairs are below 0.6",
		config: profileConfig(func(c *dedup.Options) {
			c.Spec.Normalize = normalizeWith(func(o *text.Options) { o.T2S = true })
			c.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
			c.Spec.Threshold = 0.5
		}, nil),
		tunedAbout: "neardup tune on the whole set for minhash (word 2-4-grams x 0.3-0.6) and simhash (64 bits k 9-15, 128 bits k 18-30); on a 5,000-document sample for ksentence",
		tuned: map[string]func(c *dedup.Options){
			"ksentence": func(c *dedup.Options) { c.Spec.KSentence.K = 1 },
			"simhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.SimHash.Weights, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance = shingle.Options{Unit: shingle.Word, N: 2}, sketch.WeightCount, 128, 30
			},
			"minhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.Threshold, c.Spec.MinHash.NumPerm = shingle.Options{Unit: shingle.Word, N: 2}, 0.5, 128
			},
		},
	},
	"bible-zh-scripts": {
		about: "--t2s (the point of the set: raw bigram J median 0.36, 1.0 after t2s), CJK character bigrams at 0.7",
		config: profileConfig(func(c *dedup.Options) {
			c.Spec.Normalize = normalizeWith(func(o *text.Options) { o.T2S = true })
			c.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
			c.Spec.Threshold = 0.7
		}, nil),
		tunedAbout: "neardup tune on a 5,000-document sample (whole clusters); jaccard uses minhash's shingling and threshold",
		tuned: map[string]func(c *dedup.Options){
			"ksentence": func(c *dedup.Options) { c.Spec.KSentence.K = 1 },
			"simhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.SimHash.Weights, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance = shingle.Options{Unit: shingle.Word, N: 2}, sketch.WeightTFIDF, 64, 12
			},
			"minhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.Threshold, c.Spec.MinHash.NumPerm = shingle.Options{Unit: shingle.Word, N: 2}, 0.7, 64
			},
		},
	},
	"bible-distant": {
		about: "char 5-grams (README: kinder to short verses than word 3-grams) at 0.5; truth is 'same verse', not 'near-duplicate': read the per-version recalls",
		config: profileConfig(func(c *dedup.Options) {
			c.Spec.Shingle = shingle.Options{Unit: shingle.Char, N: 5}
			c.Spec.Threshold = 0.5
		}, nil),
		refVersion:     "KJV",
		tunedAbout:     "neardup tune on an 8,000-document sample (whole clusters); no jaccard row (exact join of char 3-grams at 0.4 on 155k verses is out of the time budget)",
		noTunedJaccard: true,
		tuned: map[string]func(c *dedup.Options){
			"ksentence": func(c *dedup.Options) { c.Spec.KSentence.K = 1 },
			"simhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.SimHash.Weights, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance = shingle.Options{Unit: shingle.Char, N: 3}, sketch.WeightTFIDF, 64, 12
			},
			"minhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.Threshold, c.Spec.MinHash.NumPerm = shingle.Options{Unit: shingle.Char, N: 3}, 0.4, 128
			},
		},
	},
	"bible-kjv-family": {
		about: "char 5-grams at 0.7 over 248,812 short verses (2-93 words); MKJV is a real revision (median word-3 J 0.36 vs KJV), expect low recall on it",
		config: profileConfig(func(c *dedup.Options) {
			c.Spec.Shingle = shingle.Options{Unit: shingle.Char, N: 5}
			c.Spec.Threshold = 0.7
		}, nil),
		refVersion: "KJV",
		tunedAbout: "neardup tune on the whole set for minhash (char 5-grams x 0.5-0.9) and simhash (char 5-grams, 64 bits, k 6-12, count and tfidf); on an 8,000-document sample for ksentence",
		tuned: map[string]func(c *dedup.Options){
			"ksentence": func(c *dedup.Options) { c.Spec.KSentence.K = 1 },
			"simhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.SimHash.Weights, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance = shingle.Options{Unit: shingle.Char, N: 5}, sketch.WeightTFIDF, 64, 9
			},
			"minhash": func(c *dedup.Options) {
				c.Spec.Shingle, c.Spec.Threshold, c.Spec.MinHash.NumPerm = shingle.Options{Unit: shingle.Char, N: 5}, 0.7, 128
			},
		},
	},
}

type benchOpts struct {
	profiles []string
	data     string
	datasets []string
	methods  []string
	out      string
	jsonOut  string
	timeout  time.Duration
	workers  int
	tmpDir   string
	exe      string
}

func newBenchCmd() *cobra.Command {
	o := &benchOpts{}
	cmd := &cobra.Command{
		Use:   "bench [flags]",
		Short: "Run every method on the labelled evaluation sets and tabulate the scores",
		Long: `Run every method (exact, bloom, ksentence, simhash, minhash, jaccard) on
the labelled datasets under --data (../shared/data by default: one folder
per dataset with docs.jsonl[.gz] and truth.jsonl[.gz]) and record, per
dataset and method, pairwise precision, recall and F1, the Adjusted Rand
Index, document-level macro F1, wall and CPU time, and peak memory, with
the configuration used.

Each (dataset, method) run is a separate process, this binary's own
'neardup dedup ... --clusters F --stats F', so that its peak resident set
size (getrusage ru_maxrss of the child) is its own. The known datasets
(` + strings.Join(benchDatasets, ", ") + `) run with the normalisation, shingling and
threshold their READMEs call for (the document lists them); any other
folder with docs and truth runs with the dedup defaults. Methods are run
one at a time; a run that exceeds --timeout is stopped and recorded as
such.

The results are written as Markdown (--out, standard output by default)
and JSON (--json). A file output is checked before the first run (bench
fails at once when it cannot be written) and rewritten after each dataset.
To refresh the committed results, from the repository root:

  neardup bench --out docs/bench/eval.md --json docs/bench/eval.json

When --data holds none of the datasets, bench says so and fails (exit 1).

` + exitHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageErr("bench takes no arguments (got %q)", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.jsonOut == "-" && !cmd.Flags().Changed("out") {
				o.out = "" // --json - alone: only the JSON on standard output
			}
			return runBench(cmd.Context(), o, os.Args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&o.data, "data", filepath.Join("..", "shared", "data"), "folder of labelled datasets (one sub-folder each)")
	fs.StringSliceVar(&o.datasets, "datasets", nil, "datasets to run, comma-separated (default: the labelled sets found under --data)")
	fs.StringSliceVar(&o.methods, "methods", benchMethods, "methods to run, comma-separated")
	fs.StringSliceVar(&o.profiles, "profiles", []string{"readme", "tuned"}, "configurations to run: readme (the shingling and threshold the dataset's README calls for, method defaults otherwise), tuned (the best of neardup tune on a sample)")
	fs.StringVarP(&o.out, "out", "o", "-", "write the Markdown tables here (- for stdout, empty for none)")
	fs.StringVar(&o.jsonOut, "json", "", "write the results as JSON here (- for stdout, then with no Markdown unless --out names a file; empty for none)")
	fs.DurationVar(&o.timeout, "timeout", 20*time.Minute, "stop a single (dataset, method) run after this long")
	fs.IntVarP(&o.workers, "workers", "j", 0, "workers of each dedup run (0: all cores)")
	fs.StringVar(&o.tmpDir, "tmp-dir", "", "directory for the runs' clusters and stats files (default: the system's)")
	fs.StringVar(&o.exe, "neardup", "", "neardup binary to run (default: this one)")
	return cmd
}

// benchRun is one (dataset, method) run.
type benchRun struct {
	Dataset string `json:"dataset"`
	Method  string `json:"method"`
	// Profile is "readme" or "tuned".
	Profile string `json:"profile"`
	// Args are the dedup flags used (without the input and output files).
	Args   []string     `json:"args"`
	Params *dedup.Facts `json:"params,omitempty"`
	// Status is "ok", "timeout" or "error: ...".
	Status       string      `json:"status"`
	Documents    int         `json:"documents"`
	WallSeconds  float64     `json:"wall_seconds"`
	CPUSeconds   float64     `json:"cpu_seconds"`
	PeakRSSBytes int64       `json:"peak_rss_bytes"`
	Pairs        int         `json:"pairs"`
	Removed      int         `json:"removed"`
	Scores       tune.Scores `json:"scores"`
	// Subset scores the documents of the profile's subset.
	Subset *tune.Scores `json:"subset,omitempty"`
	// PairLabels are the fractions per label of the dataset's pairs file.
	PairLabels []eval.LabelScore `json:"pair_labels,omitempty"`
	// VersionRecall is, per version V, the fraction of (ref/X, V/X) pairs
	// put in one cluster.
	VersionRecall map[string]float64 `json:"version_recall,omitempty"`
}

// benchDataset is the results of one dataset.
type benchDataset struct {
	Name       string     `json:"name"`
	About      string     `json:"about"`
	TunedAbout string     `json:"tuned_about,omitempty"`
	Docs       string     `json:"docs"`
	Truth      string     `json:"truth"`
	SubsetName string     `json:"subset,omitempty"`
	RefVersion string     `json:"ref_version,omitempty"`
	Runs       []benchRun `json:"runs"`
}

// benchReport is the --json output.
type benchReport struct {
	Command  string         `json:"command"`
	Started  time.Time      `json:"started"`
	Seconds  float64        `json:"seconds"`
	Machine  string         `json:"machine"`
	Revision string         `json:"revision,omitempty"`
	Missing  []string       `json:"missing,omitempty"`
	Datasets []benchDataset `json:"datasets"`
}

// findData returns the docs and truth files of a dataset folder.
func findData(dir string) (docs, truth string, err error) {
	pick := func(names ...string) string {
		for _, n := range names {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p
			}
		}
		return ""
	}
	docs = pick("docs.jsonl.gz", "docs.jsonl", "docs.jsonl.zst")
	truth = pick("truth.jsonl.gz", "truth.jsonl")
	if docs == "" || truth == "" {
		return "", "", fmt.Errorf("%s: no docs.jsonl[.gz] and truth.jsonl[.gz]", dir)
	}
	return docs, truth, nil
}

func runBench(ctx context.Context, o *benchOpts, argv []string, stdout, stderr io.Writer) error {
	for _, m := range o.methods {
		if _, err := dedup.NewMethod(dedup.Options{Method: m}); err != nil {
			return usageErr("--methods: %v", err)
		}
	}
	for _, p := range o.profiles {
		if p != "readme" && p != "tuned" {
			return usageErr("--profiles %q: want readme or tuned", p)
		}
	}
	if o.timeout <= 0 {
		return usageErr("--timeout %v: must be positive", o.timeout)
	}
	if o.workers < 0 {
		return usageErr("--workers %d: must not be negative", o.workers)
	}
	if o.out == "-" && o.jsonOut == "-" {
		return usageErr("--out and --json cannot both be standard output")
	}
	// Check the outputs can be written before the work, which takes
	// minutes: a temporary file is made beside each and removed.
	for _, f := range []struct{ flag, path string }{{"--out", o.out}, {"--json", o.jsonOut}} {
		if f.path == "" || f.path == "-" {
			continue
		}
		w, err := atomicfile.Create(f.path)
		if err != nil {
			return fmt.Errorf("bench: %s %s cannot be written: %w; nothing was run", f.flag, f.path, err)
		}
		w.Abort()
	}
	exe := o.exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("bench: cannot find its own binary (give --neardup): %w", err)
		}
	}
	if st, err := os.Stat(o.data); err != nil || !st.IsDir() {
		return fmt.Errorf("bench: no evaluation data at %s (give --data DIR; the labelled sets are %s): nothing was run",
			o.data, strings.Join(benchDatasets, ", "))
	}
	names := o.datasets
	explicit := len(names) > 0
	if !explicit {
		names = benchDatasets
	}
	rep := &benchReport{Command: benchCommand(argv), Started: time.Now().UTC(), Machine: machine(), Revision: revision()}
	type job struct{ name, docs, truth string }
	var jobs []job
	for _, n := range names {
		docs, truth, err := findData(filepath.Join(o.data, n))
		if err != nil {
			if explicit {
				return usageErr("--datasets %s: %v", n, err)
			}
			rep.Missing = append(rep.Missing, n)
			fmt.Fprintf(stderr, "bench: %s not found under %s, skipped\n", n, o.data)
			continue
		}
		jobs = append(jobs, job{n, docs, truth})
	}
	if len(jobs) == 0 {
		return fmt.Errorf("bench: no labelled dataset under %s (looked for %s): nothing was run", o.data, strings.Join(names, ", "))
	}
	fmt.Fprintf(stderr, "bench: data %s; %d datasets x %d methods, one process each\n", o.data, len(jobs), len(o.methods))
	tmp, err := os.MkdirTemp(o.tmpDir, "neardup-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, j := range jobs {
		prof, ok := benchProfiles[j.name]
		if !ok {
			prof = benchProfile{about: "dedup defaults (unknown dataset)", config: profileConfig(nil, nil)}
		}
		ds := benchDataset{Name: j.name, About: prof.about, TunedAbout: prof.tunedAbout, Docs: j.docs, Truth: j.truth, SubsetName: prof.subsetName, RefVersion: prof.refVersion}
		truth, err := readLabelFile(j.truth, eval.ReadOptions{})
		if err != nil {
			return err
		}
		sc, err := newScorer(filepath.Join(o.data, j.name), prof, truth, tmp)
		if err != nil {
			return err
		}
		for _, p := range o.profiles {
			for _, m := range o.methods {
				cfg := prof.config(m)
				if p == "tuned" {
					f := prof.tunedFunc(m)
					if f == nil {
						continue
					}
					f(&cfg)
				}
				cfg.Workers = o.workers
				r := benchOne(ctx, exe, j.docs, cfg, o.timeout, tmp, sc)
				r.Dataset, r.Profile = j.name, p
				if ctx.Err() != nil {
					return ctx.Err()
				}
				fmt.Fprintf(stderr, "bench: %-18s %-6s %-9s %-8s P %.4f R %.4f F1 %.4f ARI %.4f  %.1fs wall %.1fs cpu %s\n",
					j.name, p, m, r.Status, r.Scores.Precision, r.Scores.Recall, r.Scores.F1, r.Scores.ARI,
					r.WallSeconds, r.CPUSeconds, formatSize(r.PeakRSSBytes))
				ds.Runs = append(ds.Runs, r)
			}
		}
		rep.Datasets = append(rep.Datasets, ds)
		// Write the files after each dataset, so that a long run leaves
		// its results; standard output once, at the end.
		rep.Seconds = time.Since(rep.Started).Seconds()
		if err := writeBench(o, rep, nil); err != nil {
			return err
		}
	}
	return writeBench(o, rep, stdout)
}

// benchCommand is the command line as the document shows it.
func benchCommand(argv []string) string {
	args := slices.Clone(argv)
	if len(args) > 0 {
		args[0] = "neardup"
	}
	return strings.Join(args, " ")
}

func machine() string {
	s := fmt.Sprintf("%s/%s, %d CPUs, GOMAXPROCS %d, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			s += fmt.Sprintf(", load average %s %s %s at the start", f[0], f[1], f[2])
		}
	}
	return s
}

func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

func readLabelFile(path string, opts eval.ReadOptions) (*eval.Labels, error) {
	f, err := openLabelFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return eval.Read(f, path, opts)
}

// normalizeWith returns the default normalisation changed by f.
func normalizeWith(f func(o *text.Options)) *text.Options {
	o := text.DefaultOptions()
	f(&o)
	return &o
}

// dedupArgs returns the dedup flags that reproduce cfg (every flag that
// matters to cfg.Method, normalisation included).
func dedupArgs(cfg dedup.Options) []string {
	b := func(name string, v bool) string { return "--" + name + "=" + strconv.FormatBool(v) }
	spec, err := cfg.ResolveSpec()
	if err != nil {
		return []string{"--method", cfg.Method}
	}
	method := cfg.Method
	if method == "" {
		method = spec.Method.String()
	}
	n := *spec.Normalize
	args := []string{"--method", method}
	switch method {
	case "minhash", "jaccard", "simhash", "bloom-overlap":
		args = append(args, "--unit", spec.Shingle.Unit.String(), "--ngram", strconv.Itoa(spec.Shingle.N))
	}
	var seed uint64
	switch method {
	case "minhash":
		args = append(args, "--threshold", ftoa(spec.Threshold), "--num-perm", strconv.Itoa(spec.MinHash.NumPerm))
		if g := cfg.Spec.MinHash; g.Bands > 0 || g.Rows > 0 {
			args = append(args, "--bands", strconv.Itoa(spec.MinHash.Bands), "--rows", strconv.Itoa(spec.MinHash.Rows))
		}
		if spec.MinHash.Family != minhash.OPH {
			args = append(args, "--minhash-family", spec.MinHash.Family.String())
		}
		seed = spec.MinHash.Seed
	case "jaccard", "bloom-overlap":
		args = append(args, "--threshold", ftoa(spec.Threshold))
	case "simhash":
		args = append(args, "--bits", strconv.Itoa(spec.SimHash.Bits), "--distance", strconv.Itoa(spec.SimHash.MaxDistance()),
			"--weights", spec.SimHash.Weights.String())
		if cfg.Verify {
			t := cfg.VerifyThreshold
			if t == 0 {
				t = sketch.DefaultThreshold
			}
			args = append(args, "--threshold", ftoa(t))
		}
		seed = spec.SimHash.Seed
	case "ksentence":
		args = append(args, "--k-sentences", strconv.Itoa(spec.KSentence.K))
	}
	if cfg.Verify && (method == "minhash" || method == "simhash") {
		args = append(args, "--verify")
	}
	if seed != 0 && seed != minhash.DefaultSeed && seed != simhash.DefaultSeed {
		args = append(args, "--seed", strconv.FormatUint(seed, 10))
	}
	d := text.DefaultOptions()
	for _, f := range []struct {
		name   string
		v, def bool
	}{
		{"nfkc", n.NFKC, d.NFKC}, {"case-fold", n.CaseFold, d.CaseFold}, {"fold-whitespace", n.Whitespace, d.Whitespace},
		{"fold-punct", n.Punctuation, d.Punctuation}, {"html", n.HTML, d.HTML}, {"html-all", n.HTMLAll, d.HTMLAll}, {"t2s", n.T2S, d.T2S}, {"stop-words", n.StopWords, d.StopWords},
	} {
		if f.v != f.def {
			args = append(args, b(f.name, f.v))
		}
	}
	return args
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// benchOne runs one method on one dataset in a child process and scores
// it.
func benchOne(ctx context.Context, exe, docs string, cfg dedup.Options, timeout time.Duration, tmp string, sc *scorer) benchRun {
	r := benchRun{Method: cfg.Method, Args: dedupArgs(cfg), Status: "ok"}
	clusters := filepath.Join(tmp, "clusters.jsonl")
	statsPath := filepath.Join(tmp, "stats.json")
	optsPath := filepath.Join(tmp, "options.json")
	os.Remove(clusters)
	os.Remove(statsPath)
	// The child gets the options themselves, not flags rebuilt from them
	// (r.Args is the equivalent command line, for the table).
	if err := writeOptionsJSON(optsPath, cfg); err != nil {
		r.Status = "error: " + err.Error()
		return r
	}
	args := []string{"dedup", "--options-json", optsPath, "-q", "--clusters", clusters, "--stats", statsPath}
	if cfg.Workers > 0 {
		args = append(args, "-j", strconv.Itoa(cfg.Workers))
	}
	args = append(args, docs)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, exe, args...)
	cmd.Args[0] = "neardup" // the name the binary (or a test binary) dispatches on
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	start := time.Now()
	err := cmd.Run()
	r.WallSeconds = time.Since(start).Seconds()
	r.CPUSeconds, r.PeakRSSBytes = sysinfo.ChildUsage(cmd.ProcessState)
	switch {
	case cctx.Err() == context.DeadlineExceeded:
		r.Status = fmt.Sprintf("timeout after %v", timeout)
		return r
	case err != nil:
		msg := strings.TrimSpace(errBuf.String())
		if len(msg) > 300 {
			msg = msg[len(msg)-300:]
		}
		r.Status = fmt.Sprintf("error: %v: %s", err, msg)
		return r
	}
	if b, err := os.ReadFile(statsPath); err == nil {
		var st dedup.Stats
		if json.Unmarshal(b, &st) == nil {
			r.Params, r.Documents, r.Pairs, r.Removed = &st.Params, st.Documents, st.Pairs, st.Removed
		}
	}
	if err := sc.score(clusters, &r); err != nil {
		r.Status = "error: scoring: " + err.Error()
	}
	return r
}

// scorer scores a run's clusters against a dataset's truth and extras.
type scorer struct {
	prof   benchProfile
	truth  *eval.Labels
	subset *eval.Labels
	pairs  *eval.Labels
}

func newScorer(dir string, prof benchProfile, truth *eval.Labels, tmp string) (*scorer, error) {
	sc := &scorer{prof: prof, truth: truth}
	if prof.pairs != "" {
		p := filepath.Join(dir, prof.pairs)
		if _, err := os.Stat(p); err != nil {
			p += ".gz"
		}
		l, err := readLabelFile(p, eval.ReadOptions{Positive: prof.positive})
		if err != nil {
			return nil, err
		}
		sc.pairs = l
	}
	if prof.subset != nil {
		path := filepath.Join(tmp, "subset-truth.jsonl")
		var b bytes.Buffer
		for k, id := range truth.IDs {
			if prof.subset(id) {
				line, _ := json.Marshal(map[string]string{"id": id, "cluster": strconv.Itoa(int(truth.Cluster[k]))})
				b.Write(line)
				b.WriteByte('\n')
			}
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return nil, err
		}
		l, err := readLabelFile(path, eval.ReadOptions{})
		if err != nil {
			return nil, err
		}
		sc.subset = l
	}
	return sc, nil
}

func (sc *scorer) score(clusters string, r *benchRun) error {
	pred, err := readLabelFile(clusters, eval.ReadOptions{})
	if err != nil {
		return err
	}
	if pred.Format != eval.JSONL {
		return errors.New("clusters file is not JSONL")
	}
	res, err := eval.Score(sc.truth, pred)
	if err != nil {
		return err
	}
	r.Scores = tune.ScoresOf(res)
	if sc.subset != nil {
		res, err := eval.Score(sc.subset, pred)
		if err != nil {
			return err
		}
		s := tune.ScoresOf(res)
		r.Subset = &s
	}
	if sc.pairs != nil {
		res, err := eval.Score(sc.pairs, pred)
		if err != nil {
			return err
		}
		r.PairLabels = res.Labels
	}
	if sc.prof.refVersion != "" {
		r.VersionRecall = versionRecall(sc.truth, pred, sc.prof.refVersion)
	}
	return nil
}

// versionRecall returns, per version V, the fraction of the truth's pairs
// (ref/K, V/K) that pred puts in one cluster; ids are "VERSION/KEY".
func versionRecall(truth, pred *eval.Labels, ref string) map[string]float64 {
	refDoc := make(map[int32]int, truth.NumClusters) // truth cluster -> index of its ref doc
	for k, id := range truth.IDs {
		if v, _, ok := strings.Cut(id, "/"); ok && v == ref {
			refDoc[truth.Cluster[k]] = k
		}
	}
	predOf := func(k int) (int32, bool) {
		p := pred.Index(truth.IDs[k])
		if p < 0 {
			return 0, false
		}
		return pred.Cluster[p], true
	}
	total, together := map[string]int{}, map[string]int{}
	for k, id := range truth.IDs {
		v, _, ok := strings.Cut(id, "/")
		if !ok || v == ref {
			continue
		}
		rk, ok := refDoc[truth.Cluster[k]]
		if !ok {
			continue
		}
		total[v]++
		a, okA := predOf(k)
		b, okB := predOf(rk)
		if okA && okB && a == b {
			together[v]++
		}
	}
	out := make(map[string]float64, len(total))
	for v, n := range total {
		out[v] = float64(together[v]) / float64(n)
	}
	return out
}

// writeBench writes the Markdown and JSON outputs: the files, and those
// that go to standard output ("-") when stdout is not nil.
func writeBench(o *benchOpts, rep *benchReport, stdout io.Writer) error {
	var md bytes.Buffer
	writeBenchMarkdown(&md, rep)
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	for _, out := range []struct {
		path string
		b    []byte
	}{{o.out, md.Bytes()}, {o.jsonOut, append(js, '\n')}} {
		switch {
		case out.path == "":
		case out.path == "-":
			if stdout != nil {
				if _, err := stdout.Write(out.b); err != nil {
					return err
				}
			}
		default:
			f, err := atomicfile.Create(out.path)
			if err != nil {
				return err
			}
			if _, err := f.Write(out.b); err != nil {
				f.Abort()
				return err
			}
			if err := f.Commit(); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeBenchMarkdown(b *bytes.Buffer, rep *benchReport) {
	fmt.Fprintf(b, "# Evaluation: every method on the labelled sets\n\n")
	fmt.Fprintf(b, "Generated by `%s` on %s (%.0f s in all).\n\n", rep.Command, rep.Started.Format("2006-01-02 15:04 UTC"), rep.Seconds)
	fmt.Fprintf(b, "- Machine: %s.\n", rep.Machine)
	if rep.Revision != "" {
		fmt.Fprintf(b, "- Revision: %s.\n", rep.Revision)
	}
	fmt.Fprintf(b, "- Each (dataset, method) is one child process `neardup dedup ARGS -q --clusters F --stats F DOCS`; ")
	fmt.Fprintf(b, "*wall* is its elapsed time, *CPU* its user+system time and *peak RSS* its `ru_maxrss` (getrusage of the child), so memory is the method's own. ")
	fmt.Fprintf(b, "The machine is shared and noisy: compare times within one table, not across runs.\n")
	fmt.Fprintf(b, "- Two profiles per dataset: *readme* runs every method with the normalisation, shingling and threshold the dataset's README calls for and the method's own defaults otherwise; *tuned* runs the best configuration `neardup tune` found on a sample of the dataset (by pairwise F1; docs/defaults.md has the sweeps).\n")
	fmt.Fprintf(b, "- *removed* counts the documents the method removes as duplicates. bloom names the earlier copy of a key while its key map fits in memory (docs/outputs.md), so it scores like exact; past the map, a removed document is a singleton to the scorer.\n")
	fmt.Fprintf(b, "- Scores: pairwise precision, recall and F1 over same-cluster pairs, Adjusted Rand Index, and document-level macro F1 (package eval; docs/eval.md).\n")
	if len(rep.Missing) > 0 {
		fmt.Fprintf(b, "- Not found, skipped: %s.\n", strings.Join(rep.Missing, ", "))
	}
	b.WriteString("\n")
	for _, ds := range rep.Datasets {
		fmt.Fprintf(b, "## %s\n\n", ds.Name)
		docs := 0
		for _, r := range ds.Runs {
			docs = max(docs, r.Documents)
		}
		fmt.Fprintf(b, "%d documents. Profile *readme*: %s.\n", docs, ds.About)
		if ds.TunedAbout != "" {
			fmt.Fprintf(b, "Profile *tuned* (rows marked (tuned)): %s.\n", ds.TunedAbout)
		}
		b.WriteString("\n")
		fmt.Fprintf(b, "| method | configuration (dedup flags) | precision | recall | F1 | ARI | macro F1 | pairs | removed | wall s | CPU s | peak RSS |\n")
		fmt.Fprintf(b, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range ds.Runs {
			conf := "`" + strings.Join(r.Args, " ") + "`"
			if extra := paramNote(r); extra != "" {
				conf += " " + extra
			}
			if r.Status != "ok" {
				fmt.Fprintf(b, "| %s | %s | %s | | | | | | | %.1f | %.1f | %s |\n", runName(r), conf, mdEscape(r.Status), r.WallSeconds, r.CPUSeconds, formatSize(r.PeakRSSBytes))
				continue
			}
			s := r.Scores
			fmt.Fprintf(b, "| %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %d | %d | %.1f | %.1f | %s |\n",
				runName(r), conf, s.Precision, s.Recall, s.F1, s.ARI, s.MacroF1, r.Pairs, r.Removed, r.WallSeconds, r.CPUSeconds, formatSize(r.PeakRSSBytes))
		}
		b.WriteString("\n")
		if ds.SubsetName != "" {
			fmt.Fprintf(b, "Scores over the %s:\n\n| method | precision | recall | F1 | ARI |\n|---|---:|---:|---:|---:|\n", ds.SubsetName)
			for _, r := range ds.Runs {
				if r.Subset != nil {
					s := r.Subset
					fmt.Fprintf(b, "| %s | %.4f | %.4f | %.4f | %.4f |\n", runName(r), s.Precision, s.Recall, s.F1, s.ARI)
				}
			}
			b.WriteString("\n")
		}
		if ds.RefVersion != "" {
			var versions []string
			for _, r := range ds.Runs {
				for v := range r.VersionRecall {
					if !slices.Contains(versions, v) {
						versions = append(versions, v)
					}
				}
			}
			slices.Sort(versions)
			if len(versions) > 0 {
				fmt.Fprintf(b, "Recall per version pair (%s vs V: fraction of verse pairs put in one cluster):\n\n| method |", ds.RefVersion)
				for _, v := range versions {
					fmt.Fprintf(b, " %s |", v)
				}
				b.WriteString("\n|---|" + strings.Repeat("---:|", len(versions)) + "\n")
				for _, r := range ds.Runs {
					if r.VersionRecall == nil {
						continue
					}
					fmt.Fprintf(b, "| %s |", runName(r))
					for _, v := range versions {
						fmt.Fprintf(b, " %.4f |", r.VersionRecall[v])
					}
					b.WriteString("\n")
				}
				b.WriteString("\n")
			}
		}
		var labels []string
		for _, r := range ds.Runs {
			for _, l := range r.PairLabels {
				if !slices.Contains(labels, l.Label) {
					labels = append(labels, l.Label)
				}
			}
		}
		if len(labels) > 0 {
			fmt.Fprintf(b, "Labelled pairs of the dataset's pairs file put in one cluster (recall for a positive label, false-positive rate for a negative one):\n\n| method |")
			for _, l := range labels {
				fmt.Fprintf(b, " %s |", l)
			}
			b.WriteString("\n|---|" + strings.Repeat("---:|", len(labels)) + "\n")
			for _, r := range ds.Runs {
				if len(r.PairLabels) == 0 {
					continue
				}
				fmt.Fprintf(b, "| %s |", runName(r))
				for _, l := range labels {
					cell := ""
					for _, ls := range r.PairLabels {
						if ls.Label == l {
							cell = fmt.Sprintf("%.3f (%d/%d)", ls.Fraction, ls.Together, ls.Pairs)
						}
					}
					fmt.Fprintf(b, " %s |", cell)
				}
				b.WriteString("\n")
			}
			b.WriteString("\n")
		}
	}
}

// runName is the method as the tables show it: "minhash", or "minhash
// (tuned)" in the tuned profile.
func runName(r benchRun) string {
	if r.Profile == "tuned" {
		return r.Method + " (tuned)"
	}
	return r.Method
}

// paramNote adds the effective parameters a reader needs that the flags
// leave implicit (the banding chosen for minhash).
func paramNote(r benchRun) string {
	if r.Method == "minhash" && r.Params != nil {
		return fmt.Sprintf("(%v bands x %v rows)", r.Params.Bands, r.Params.Rows)
	}
	return ""
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
