// Package report renders what a dedup run did as one self-contained HTML
// page, and diffs two texts word by word for people to read.
//
// # The report
//
// Write renders a Run (the dedup.Options and the dedup.Stats of one run) as
// a single HTML file that needs no network and no script to view: the
// run's configuration and summary in plain words; for minhash the LSH
// S-curve P(candidate) = 1 - (1 - s^r)^b of the chosen bands b and rows r
// with the threshold marked; the histogram of the similarities (or, for
// simhash, the Hamming distances) of the reported pairs; the cluster size
// distribution; the time of every stage and the process memory (for a
// staged job, Run.Tasks: what its stages' tasks used); and the
// example clusters of the Stats (the largest first, then random ones),
// each with its kept document and its removed duplicates, their exact
// Jaccard similarity to the kept document at the run's shingling, and the
// passages where they differ from it highlighted (deleted text struck
// through in red, inserted text in green). Plots are PNG images drawn with
// gonum.org/v1/plot and embedded as data: URLs.
//
// Document text is untrusted: every piece of it goes through html/template
// and is shown as text, never interpreted as markup. Long documents are
// shown up to Options.MaxRunes characters.
//
// # Diffs
//
// DiffText is a word-level diff for people: Tokenize splits text into
// words, whitespace runs and single other characters (CJK ideographs one
// by one), Diff finds a shortest edit script of the tokens (Myers'
// O(ND) algorithm with linear-space bisection, under a work budget), and
// changes separated only by whitespace are joined into one phrase. Apply
// replays a script and checks it; applying DiffText(a, b) to a gives b.
//
// # Concurrency and errors
//
// Everything here is safe for concurrent use. Write returns the errors of
// its io.Writer and of plot rendering; Apply returns ErrDiff when the
// edits do not fit the text.
package report

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gonum.org/v1/plot"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// Run is what a report shows: one dedup run.
type Run struct {
	// Options are the options the run was given.
	Options dedup.Options
	// Stats is what dedup.Run returned. Its Examples are the clusters the
	// report shows.
	Stats *dedup.Stats
	// Source describes the input in words ("the embedded sample corpus",
	// a list of files); "" leaves it out.
	Source string
	// Command is the command line of the run; "" leaves it out.
	Command string
	// Memory is the process memory after the run; nil leaves it out.
	Memory *Memory
	// Generated is when the report was made; the zero time leaves it out.
	Generated time.Time
	// RemovedIDs are the ids of the removed documents, in input order
	// (dedup.Outputs.Removed); the report offers them as a text file to
	// download, embedded in the page, when they take at most
	// MaxRemovedBytes. RemovedOmitted says that the caller left them out
	// because there were more; nil with RemovedOmitted false offers none.
	RemovedIDs     []string
	RemovedOmitted bool
	// Tasks, for a staged job (neardup dedup --executor), are what its
	// stages' tasks used, in stage order; the report shows them in place
	// of the stage times of one process, which such a job has not.
	Tasks []StageUsage
}

// StageUsage is what the tasks of one stage of a staged job used (its
// usage.json).
type StageUsage struct {
	Stage string
	// Tasks is how many tasks recorded their usage.
	Tasks int
	// CPUSeconds is the user and system CPU time of all of them.
	CPUSeconds float64
	// LargestRSS is the largest peak resident memory of one of them.
	LargestRSS int64
}

// MaxRemovedBytes bounds the removed ids embedded in a report (one id a
// line): beyond it the page would be too large to open comfortably, and
// the --clusters output is the list to use.
const MaxRemovedBytes = 8 << 20

// Memory is the memory of the process, from runtime.MemStats.
type Memory struct {
	// HeapInUse is the Go heap in use (HeapInuse) when it was read.
	HeapInUse uint64
	// TotalAlloc is the heap allocated since the process started.
	TotalAlloc uint64
	// Sys is the memory obtained from the operating system by the Go
	// runtime.
	Sys uint64
}

// ReadMemory returns the process memory now.
func ReadMemory() *Memory {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &Memory{HeapInUse: ms.HeapInuse, TotalAlloc: ms.TotalAlloc, Sys: ms.Sys}
}

// Options configures Write. The zero value means the defaults.
type Options struct {
	// MaxRunes is how many characters of each document are shown and
	// diffed; 0 means 4000.
	MaxRunes int
	// Title heads the page; "" means "neardup dedup report".
	Title string

	// noPlots leaves the images out (golden tests, whose PNG bytes would
	// depend on the font rasteriser).
	noPlots bool
}

// Write renders r as a self-contained HTML page to w.
func Write(w io.Writer, r *Run, opts Options) error {
	if r == nil || r.Stats == nil {
		return fmt.Errorf("report: no run statistics")
	}
	if opts.MaxRunes <= 0 {
		opts.MaxRunes = 4000
	}
	if opts.Title == "" {
		opts.Title = "neardup dedup report"
	}
	page, err := build(r, opts)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, page); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

//go:embed report.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(a, b int) string {
		if b == 0 {
			return "0%"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
	},
	"removed": func(sc dedup.SizeCount) string { return Number((sc.Size - 1) * sc.Count) },
	"num":     Number[int],
}).Parse(pageSource))

// Number writes n with thousands separators (2,225), as the command's
// summaries write the counts they show to people (human.Number).
func Number[T int | int64](n T) string { return human.Number(n) }

// page is what the template renders.
type page struct {
	Title      string
	Generated  string
	Command    string
	Source     string
	Stats      *dedup.Stats
	Summary    []string // plain-language sentences
	Config     []kv
	Params     []kv
	Normalize  string
	Shingling  string
	Threshold  string
	Plots      []figure
	Stages     []stageRow
	TotalTime  string
	TaskStages []taskStageRow
	Memory     []kv
	Singletons int
	Sizes      []dedup.SizeCount // sizes from 2
	Largest    []clusterView
	Random     []clusterView
	SimNote    string
	Warnings   []string
	// Removed is the download link of the removed ids (a data: URL), or
	// RemovedNote says why there is none.
	Removed     template.URL
	RemovedN    int
	RemovedNote string
}

type kv struct{ Key, Value string }

type figure struct {
	ID      string
	Title   string
	Caption string
	Alt     string
	Src     template.HTMLAttr // src="data:image/png;base64,..."; base64 needs no escaping
	Note    string            // shown instead of the image when there is none
}

type taskStageRow struct {
	Stage    string
	Tasks    int
	CPU, RSS string
}

type stageRow struct {
	Name    string
	Seconds string
	Share   string
}

type clusterView struct {
	N       int
	Kind    string
	Size    int
	Shown   int
	Kept    member
	Removed []member
	Open    bool
}

type member struct {
	ID        string
	Kept      bool
	Jaccard   string // exact Jaccard with the kept document
	Shared    string // "12 of 14 shingles"
	Same      string // "identical text", "same text after normalisation" or ""
	Edits     []Edit // against the kept document; Equal only for the kept one
	Truncated int    // characters not shown
}

func build(r *Run, opts Options) (*page, error) {
	s, cfg, spec := r.Stats, r.Options, r.spec()
	p := &page{Title: opts.Title, Command: r.Command, Source: r.Source, Stats: s}
	if !r.Generated.IsZero() {
		p.Generated = r.Generated.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	p.Summary = summary(r)
	p.Shingling = shinglingName(spec.Shingle)
	p.Threshold = strconv.FormatFloat(r.threshold(), 'g', -1, 64)
	p.Config = configRows(cfg, spec, s)
	if len(r.Tasks) > 0 {
		// A staged job: its tasks, not one process's workers.
		tasks := 0
		for _, u := range r.Tasks {
			tasks = max(tasks, u.Tasks)
		}
		p.Config[len(p.Config)-1] = kv{"tasks a stage (staged job)", strconv.Itoa(tasks)}
	}
	p.Params = paramRows(s.Params.Map())
	p.Normalize = normalizeName(*spec.Normalize)

	for _, sc := range s.ClusterSizes {
		if sc.Size == 1 {
			p.Singletons = sc.Count
		} else {
			p.Sizes = append(p.Sizes, sc)
		}
	}
	var total float64
	for _, st := range s.Stages {
		total += st.Seconds
	}
	for _, st := range s.Stages {
		share := "–"
		if total > 0 {
			share = fmt.Sprintf("%.0f%%", 100*st.Seconds/total)
		}
		p.Stages = append(p.Stages, stageRow{st.Name, seconds(st.Seconds), share})
	}
	p.TotalTime = seconds(total)
	for _, u := range r.Tasks {
		p.TaskStages = append(p.TaskStages, taskStageRow{u.Stage, u.Tasks, seconds(u.CPUSeconds), bytesName(uint64(max(u.LargestRSS, 0)))})
	}
	if s.PeakRSSBytes > 0 {
		p.Memory = append(p.Memory, kv{"peak resident memory of the process (RSS)", bytesName(uint64(s.PeakRSSBytes))})
	}
	if mp := s.Memory; mp.EstimatedBytes > 0 || mp.BudgetBytes > 0 {
		plan := fmt.Sprintf("%s live estimated for about %d documents, budget %s", bytesName(uint64(max(mp.EstimatedBytes, 0))),
			mp.EstimatedDocs, bytesName(uint64(max(mp.BudgetBytes, 0))))
		if mp.EstimatedPeakBytes > 0 {
			plan += fmt.Sprintf("; peak about %s", bytesName(uint64(mp.EstimatedPeakBytes)))
		}
		if mp.Spill {
			plan += "; bucket keys spilled to disk"
		} else {
			plan += "; held in memory"
		}
		p.Memory = append(p.Memory, kv{"memory plan made before the run", plan})
	}
	if m := r.Memory; m != nil {
		p.Memory = append(p.Memory,
			kv{"Go heap in use after the run", bytesName(m.HeapInUse)},
			kv{"heap allocated in total", bytesName(m.TotalAlloc)},
			kv{"memory obtained from the OS by the Go runtime", bytesName(m.Sys)})
	}
	if s.InputBytes > 0 {
		p.Memory = append(p.Memory, kv{"input read", bytesName(uint64(s.InputBytes))})
	}

	removedList(p, r)
	figs, warn, err := figures(r, opts)
	if err != nil {
		return nil, err
	}
	p.Plots, p.Warnings = figs, warn
	if s.Traditional > 0 && !spec.Normalize.T2S {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s Traditional Chinese characters, and Traditional to Simplified conversion was off: "+
			"a Traditional text and a Simplified copy of it, if the corpus holds any, are not compared as the same text. --t2s compares texts in Simplified form; this run did not measure whether that would remove more documents.",
			plural(s.Traditional, "document contains", "documents contain")))
	}
	if s.HTMLLike > 0 && !spec.Normalize.HTML {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s like HTML pages (<!DOCTYPE html> or <html>), and the HTML step was off: "+
			"their markup and the site's template were compared as text, which makes pages of one site look alike. --html compares their main content.",
			plural(s.HTMLLike, "document starts", "documents start")))
	}
	if s.HTMLNoMainContent > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s no main content that the HTML step could find (a page of links only, or too little text to score): "+
			"they were compared on their whole visible text, the site's template included, or were empty.",
			plural(s.HTMLNoMainContent, "HTML document had", "HTML documents had")))
	}
	p.SimNote = "The similarity shown for each removed document is the exact Jaccard similarity of its " +
		p.Shingling + " set to the kept document's, after normalisation (" + p.Normalize + ")."
	switch s.Method {
	case "exact", "bloom":
		p.SimNote += " The " + s.Method + " method removes only documents whose normalised text is identical (or, with a key field, whose key is)."
	case "ksentence":
		p.SimNote += " The ksentence method removes documents whose longest sentences are identical; their Jaccard similarity can be low."
	case "simhash":
		p.SimNote += " The simhash method decides by the Hamming distance of fingerprints, not by this similarity."
	case "minhash":
		p.SimNote += " The minhash method decides by an estimate of this similarity (the fraction of equal signature slots), so a few pairs may lie below the threshold."
	}

	clusters, err := exampleClusters(spec, s.Examples, opts.MaxRunes)
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		if c.Kind == "random" {
			c.N = len(p.Random) + 1
			p.Random = append(p.Random, c)
		} else {
			c.N = len(p.Largest) + 1
			c.Open = c.N <= 3
			p.Largest = append(p.Largest, c)
		}
	}
	return p, nil
}

// removedList embeds the removed ids as a data: URL, one id a line, or
// says why it cannot.
func removedList(p *page, r *Run) {
	p.RemovedN = len(r.RemovedIDs)
	switch {
	case r.RemovedOmitted:
		p.RemovedNote = fmt.Sprintf("The list of removed ids is not embedded: it would exceed %s. The --clusters output lists them (\"kept\": false).", bytesName(MaxRemovedBytes))
		return
	case len(r.RemovedIDs) == 0:
		return
	}
	n := 0
	for _, id := range r.RemovedIDs {
		n += len(id) + 1
	}
	if n > MaxRemovedBytes {
		p.RemovedNote = fmt.Sprintf("The list of removed ids is not embedded: at %s it exceeds %s. The --clusters output lists them (\"kept\": false).", bytesName(uint64(n)), bytesName(MaxRemovedBytes))
		return
	}
	b := make([]byte, 0, n)
	for _, id := range r.RemovedIDs {
		// An id holds no newline in any reader's output but JSONL's; a
		// list with one would be ambiguous, so such an id is written as
		// a JSON string.
		if strings.ContainsAny(id, "\n\r") {
			q, _ := json.Marshal(id)
			b = append(b, q...)
		} else {
			b = append(b, id...)
		}
		b = append(b, '\n')
	}
	p.Removed = template.URL("data:text/plain;charset=utf-8;base64," + base64.StdEncoding.EncodeToString(b))
}

func summary(r *Run) []string {
	s, cfg := r.Stats, r.Options
	var out []string
	src := "the input"
	if r.Source != "" {
		src = r.Source
	}
	remain := "remain"
	if s.Kept == 1 {
		remain = "remains"
	}
	out = append(out, fmt.Sprintf("neardup read %s from %s and removed %s as near-duplicates of a document it kept; %s %s.",
		plural(s.Documents, "document", "documents"), src, plural(s.Removed, "document", "documents"), plural(s.Kept, "document", "documents"), remain))
	switch {
	case s.Clusters > 0 && s.Params.Cluster == "leader":
		out = append(out, fmt.Sprintf("The duplicates form %s: in keep order (%s), each document joined the kept document it is most similar to, if one was similar enough, or was kept itself, so every removed document is a near-duplicate of the document kept in its place. The largest cluster holds %s.",
			plural(s.Clusters, "cluster", "clusters"), keepName(cfg), plural(s.LargestCluster, "document", "documents")))
	case s.Clusters > 0:
		chained := ""
		if n := s.RemovedBelowThreshold; n != nil && *n > 0 {
			chained = fmt.Sprintf(" %s joined through such a chain, not similar enough to the kept document itself (--cluster leader removes none such).",
				plural(*n, "removed document was", "removed documents were"))
		}
		out = append(out, fmt.Sprintf("The duplicates form %s: groups of documents that are near-duplicates of one another, directly or through a chain of pairs. The largest holds %s. In every cluster one document is kept (%s) and the others are removed.%s",
			plural(s.Clusters, "cluster", "clusters"), plural(s.LargestCluster, "document", "documents"), keepName(cfg), chained))
	default:
		out = append(out, "No two documents were found to be duplicates.")
	}
	if s.Cascade {
		out = append(out, fmt.Sprintf("An exact stage ran first (--method cascade): %s identical to an earlier one after normalisation, joined with it without being sketched; the other %s found by %s among the first occurrences.",
			plural(s.ExactCopies, "document was", "documents were"), plural(s.Removed-s.ExactCopies, "removed document was", "removed documents were"), s.Method))
	}
	out = append(out, "Two documents are duplicates when "+criterion(r)+".")
	if s.Skipped > 0 || s.Empty > 0 {
		out = append(out, fmt.Sprintf("%s were skipped as invalid and %s had no text after normalisation (kept, never duplicates).",
			plural(s.Skipped, "record", "records"), plural(s.Empty, "document", "documents")))
	}
	return out
}

func criterion(r *Run) string {
	s, cfg, spec := r.Stats, r.Options, r.spec()
	sh := shinglingName(spec.Shingle)
	thr := strconv.FormatFloat(r.threshold(), 'g', -1, 64)
	switch s.Method {
	case "exact":
		return "their normalised texts are identical"
	case "bloom":
		if cfg.KeyField != "" {
			return "their " + cfg.KeyField + " fields are identical (as far as a Bloom filter can tell)"
		}
		return "their normalised texts are identical (as far as a Bloom filter can tell)"
	case "ksentence":
		return fmt.Sprintf("their %d longest sentences are identical", spec.KSentence.K)
	case "simhash":
		return fmt.Sprintf("their %d-bit SimHash fingerprints of %s differ in at most %d bits", spec.SimHash.Bits, sh, spec.SimHash.MaxDistance())
	case "jaccard":
		return fmt.Sprintf("the Jaccard similarity of their %s sets is at least %s (computed exactly)", sh, thr)
	case "minhash":
		switch {
		case cfg.Verify:
			return fmt.Sprintf("the Jaccard similarity of their %s sets, computed exactly for every pair whose %d-slot MinHash signatures make it a candidate, is at least %s", sh, spec.MinHash.NumPerm, thr)
		case cfg.EstimateOnly:
			return fmt.Sprintf("the Jaccard similarity of their %s sets, estimated from %d-slot MinHash signatures, is at least %s", sh, spec.MinHash.NumPerm, thr)
		}
		return fmt.Sprintf("the Jaccard similarity of their %s sets is at least %s: estimated from %d-slot MinHash signatures, and computed exactly whenever the estimate is too close to the threshold to decide", sh, thr, spec.MinHash.NumPerm)
	}
	return "the " + s.Method + " method says so"
}

func keepName(cfg dedup.Options) string {
	switch cfg.Keep.String() {
	case "first":
		return "the first in input order"
	case "longest":
		return "the longest"
	}
	return cfg.Keep.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Number(n) + " " + many
}

func shinglingName(o shingle.Options) string {
	n := max(o.N, 1)
	switch o.Unit {
	case shingle.Char:
		return fmt.Sprintf("character %d-gram", n)
	case shingle.CJKWord:
		return fmt.Sprintf("word %d-gram (Chinese word segmentation)", n)
	}
	return fmt.Sprintf("word %d-gram", n)
}

func normalizeName(o text.Options) string {
	var on []string
	add := func(b bool, name string) {
		if b {
			on = append(on, name)
		}
	}
	add(o.HTML && !o.HTMLAll, "HTML main content")
	add(o.HTML && o.HTMLAll, "HTML to text (whole page)")
	add(o.NFKC, "NFKC")
	add(o.CaseFold, "case folding")
	add(o.Whitespace, "whitespace folding")
	add(o.Punctuation, "punctuation folding")
	add(o.Invisible, "invisible characters removed")
	add(o.T2S, "Traditional to Simplified Chinese")
	add(o.StopWords, "stop words removed")
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ", ")
}

func configRows(cfg dedup.Options, spec sketch.Spec, s *dedup.Stats) []kv {
	rows := []kv{{"method", s.Method}}
	thr := strconv.FormatFloat(spec.Threshold, 'g', -1, 64)
	var seed uint64
	switch s.Method {
	case "minhash":
		rows = append(rows, kv{"threshold (Jaccard)", thr},
			kv{"shingles", shinglingName(spec.Shingle)}, kv{"permutations", strconv.Itoa(spec.MinHash.NumPerm)})
		if given := cfg.Spec.MinHash; given.Bands > 0 {
			rows = append(rows, kv{"bands × rows (given)", fmt.Sprintf("%d × %d", spec.MinHash.Bands, spec.MinHash.Rows)})
		}
		// The join the run used (tiered, --verify or --estimate-only) and
		// its clustering, as the method describes them.
		if join := s.Params.Join; join != "" {
			rows = append(rows, kv{"pairs joined when", join})
		} else {
			rows = append(rows, kv{"verify by exact Jaccard", strconv.FormatBool(cfg.Verify)})
		}
		if c := s.Params.Cluster; c != "" {
			rows = append(rows, kv{"clusters", c})
		}
		seed = spec.MinHash.Seed
	case "jaccard":
		rows = append(rows, kv{"threshold (Jaccard)", thr},
			kv{"shingles", shinglingName(spec.Shingle)})
	case "simhash":
		rows = append(rows, kv{"shingles", shinglingName(spec.Shingle)}, kv{"bits", strconv.Itoa(spec.SimHash.Bits)},
			kv{"maximum distance", strconv.Itoa(spec.SimHash.MaxDistance())}, kv{"weights", spec.SimHash.Weights.String()})
		seed = spec.SimHash.Seed
	case "ksentence":
		rows = append(rows, kv{"longest sentences", strconv.Itoa(spec.KSentence.K)})
	case "bloom":
		if cfg.KeyField != "" {
			rows = append(rows, kv{"key field", cfg.KeyField})
		}
		fpp := cfg.BloomFPP
		if fpp == 0 {
			fpp = dedup.DefaultBloomFPP
		}
		rows = append(rows, kv{"target false-positive probability", strconv.FormatFloat(fpp, 'g', -1, 64)})
		seed = cfg.BloomSeed
	}
	if seed != 0 && seed != minhash.DefaultSeed && seed != simhash.DefaultSeed {
		rows = append(rows, kv{"seed", strconv.FormatUint(seed, 10)})
	}
	rows = append(rows, kv{"normalisation", normalizeName(*spec.Normalize)},
		kv{"kept document of a cluster", keepName(cfg)}, kv{"workers", strconv.Itoa(s.Workers)})
	return rows
}

// spec returns the run's resolved sketch specification: the one its
// Stats record, else the one its Options resolve to (a Run built by hand),
// else the default of its method.
func (r *Run) spec() sketch.Spec {
	if r.Stats != nil && r.Stats.Spec.Version != 0 {
		return r.Stats.Spec
	}
	if s, err := r.Options.ResolveSpec(); err == nil {
		return s
	}
	m, _ := sketch.ParseMethod(r.Stats.Method)
	return sketch.Default(m)
}

// threshold returns the run's Jaccard threshold: the Spec's, or for
// simhash the threshold of --verify.
func (r *Run) threshold() float64 {
	if t := r.spec().Threshold; t != 0 {
		return t
	}
	if t := r.Options.VerifyThreshold; t != 0 {
		return t
	}
	return sketch.DefaultThreshold
}

// paramRows lists the method's own description of its parameters, sorted
// by key.
func paramRows(params map[string]any) []kv {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rows := make([]kv, 0, len(keys))
	for _, k := range keys {
		var v string
		switch x := params[k].(type) {
		case string:
			v = x
		case float64:
			v = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			b, err := json.Marshal(x)
			if err != nil {
				v = fmt.Sprint(x)
			} else {
				v = string(b)
			}
		}
		rows = append(rows, kv{k, v})
	}
	return rows
}

func seconds(s float64) string {
	switch {
	case s >= 10:
		return fmt.Sprintf("%.1f s", s)
	case s >= 0.01:
		return fmt.Sprintf("%.3f s", s)
	default:
		return fmt.Sprintf("%.2f ms", s*1000)
	}
}

func bytesName(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// banding returns the LSH banding of a minhash run, from its resolved
// Spec, and whether it was given or chosen.
func banding(r *Run) (lsh.Params, string, bool) {
	spec := r.spec()
	if r.Stats.Method != "minhash" || spec.Method != sketch.MinHash {
		return lsh.Params{}, "", false
	}
	if g := r.Options.Spec.MinHash; g.Bands > 0 || g.Rows > 0 {
		return spec.Banding(), "given on the command line", true
	}
	return spec.Banding(), "chosen by the run", true
}

func figures(r *Run, opts Options) ([]figure, []string, error) {
	s, cfg, spec := r.Stats, r.Options, r.spec()
	thr := r.threshold()
	var figs []figure
	var warn []string
	add := func(f figure, p *plot.Plot, err error) error {
		if err != nil {
			return err
		}
		if p != nil && !opts.noPlots {
			png, err := renderPNG(p)
			if err != nil {
				return fmt.Errorf("report: plot %q: %w", f.Title, err)
			}
			f.Src = template.HTMLAttr(`src="data:image/png;base64,` + base64.StdEncoding.EncodeToString(png) + `"`)
		}
		figs = append(figs, f)
		return nil
	}

	// S-curve.
	if bp, from, ok := banding(r); ok {
		p, err := sCurvePlot(bp, thr)
		f := figure{ID: "s-curve", Title: "Which pairs LSH compares",
			Alt: fmt.Sprintf("S-curve of %d bands of %d rows", bp.Bands, bp.Rows),
			Caption: fmt.Sprintf("MinHash with LSH banding only compares two documents when their signatures agree on all %d rows of at least one of %d bands. "+
				"The curve is the probability 1 − (1 − s^%d)^%d that a pair of Jaccard similarity s is compared: "+
				"%.0f%% of pairs at the threshold %s, %.0f%% at %.2f, %.1f%% at %.2f. Pairs that are never compared cannot be found; every compared pair costs time.%s Banding: %d × %d, %s.",
				bp.Rows, bp.Bands, bp.Rows, bp.Bands,
				100*bp.Probability(thr), strconv.FormatFloat(thr, 'g', -1, 64),
				100*bp.Probability(min(1, thr+0.1)), min(1, thr+0.1),
				100*bp.Probability(max(0, thr-0.2)), max(0, thr-0.2),
				joinRule(s.Params), bp.Bands, bp.Rows, from)}
		if err := add(f, p, err); err != nil {
			return nil, nil, err
		}
	} else if s.Method == "minhash" {
		warn = append(warn, "The S-curve is missing: the run did not state its bands and rows.")
	}

	// Similarity or distance histogram.
	if len(s.Distance) > 0 {
		counts := make([]int, max(len(s.Distance), spec.SimHash.MaxDistance()+1))
		copy(counts, s.Distance)
		p, err := histPlot("Hamming distance of the reported pairs", "differing fingerprint bits", -0.5, 1, counts,
			float64(spec.SimHash.MaxDistance())+0.5, fmt.Sprintf("at most %d bits", spec.SimHash.MaxDistance()))
		if err == nil {
			p.X.Tick.Marker = integerTicks{}
		}
		f := figure{ID: "distance", Title: "How different the duplicate pairs are",
			Alt:     "histogram of Hamming distances of the reported pairs",
			Caption: fmt.Sprintf("Each reported pair of SimHash fingerprints, by the number of bits in which they differ (at most %d for a duplicate). 0 means the fingerprints are identical. The count axis is logarithmic (each bar is labelled with its count).", spec.SimHash.MaxDistance())}
		if err := add(f, p, err); err != nil {
			return nil, nil, err
		}
	} else {
		counts := s.Similarity[:]
		mark := math.NaN()
		if s.Method == "minhash" || s.Method == "jaccard" || cfg.Verify {
			mark = thr
		}
		var p *plot.Plot
		var err error
		if s.Pairs > 0 {
			p, err = histPlot("Similarity of the reported pairs", "Jaccard similarity", 0, 0.05, counts, mark,
				"threshold "+strconv.FormatFloat(thr, 'g', -1, 64))
		}
		f := figure{ID: "similarity", Title: "How similar the duplicate pairs are",
			Alt:     "histogram of the similarities of the reported pairs",
			Caption: fmt.Sprintf("Each of the %s the run reported, by its similarity in bins of 0.05, on a logarithmic count axis (each bar is labelled with its count). Exact methods report 1 for every pair; minhash reports the exact Jaccard where it verified the pair and its estimate otherwise.", plural(s.Pairs, "pair", "pairs"))}
		if s.Pairs == 0 {
			f.Note = "No pairs were reported."
		}
		if err := add(f, p, err); err != nil {
			return nil, nil, err
		}
	}

	// Cluster sizes.
	{
		var p *plot.Plot
		var err error
		f := figure{ID: "sizes", Title: "How large the clusters are", Alt: "number of clusters of each size",
			Caption: fmt.Sprintf("Clusters of two or more documents, by size; a cluster of n documents keeps one and removes n − 1. Documents without any duplicate (%s) are not drawn.", Number(singletons(s.ClusterSizes)))}
		if s.Clusters > 0 {
			p, err = sizesPlot(s.ClusterSizes)
		} else {
			f.Note = "No clusters with duplicates."
		}
		if err := add(f, p, err); err != nil {
			return nil, nil, err
		}
	}

	// Stages.
	if len(s.Stages) > 0 {
		p, err := stagesPlot(s.Stages)
		f := figure{ID: "stages", Title: "Where the time went", Alt: "wall time of each stage", Caption: "Wall time of every stage of the run, written beside each bar; a stage far shorter than the longest is drawn at a minimum length so that it stays visible."}
		if err := add(f, p, err); err != nil {
			return nil, nil, err
		}
	}
	return figs, warn, nil
}

// joinRule says how the method decides on a compared pair, from its
// facts.
func joinRule(f dedup.Facts) string {
	if f.Join != "" {
		return " A compared pair is a duplicate by this rule: " + f.Join + "."
	}
	return ""
}

func singletons(sizes []dedup.SizeCount) int {
	for _, sc := range sizes {
		if sc.Size == 1 {
			return sc.Count
		}
	}
	return 0
}

// exampleClusters prepares the example clusters: the exact Jaccard of
// every member with the kept one and the diff against it.
func exampleClusters(spec sketch.Spec, examples []dedup.Example, maxRunes int) ([]clusterView, error) {
	if len(examples) == 0 {
		return nil, nil
	}
	// With --html the examples' texts are already the extracted text
	// (dedup.ExampleDoc): extracting again would read a "<" in it as markup.
	nopts := *spec.Normalize
	nopts.HTML, nopts.HTMLAll = false, false
	// The run's shingles, or the default ones for methods without.
	js := sketch.Spec{Method: sketch.Jaccard, Normalize: &nopts, Shingle: spec.Shingle}
	k, err := js.NewSketcher()
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var sk sketch.Sketch
	setOf := func(normalized string) []uint64 {
		k.SketchNormalized(&sk, []byte(normalized))
		return slices.Clone(sk.Set)
	}
	var out []clusterView
	for _, ex := range examples {
		if len(ex.Members) == 0 {
			continue
		}
		members := slices.Clone(ex.Members)
		// The kept document comes first; find it if it does not.
		if k := slices.IndexFunc(members, func(m dedup.ExampleDoc) bool { return m.Kept }); k > 0 {
			members[0], members[k] = members[k], members[0]
		}
		keptText, keptCut := cut(members[0].Text, maxRunes)
		keptNorm := string(k.Normalize(nil, members[0].Text))
		keptSet := setOf(keptNorm)
		c := clusterView{Kind: ex.Kind, Size: ex.Size, Shown: len(members),
			Kept: member{ID: human.ID(members[0].ID), Kept: members[0].Kept, Edits: []Edit{{Equal, keptText}}, Truncated: keptCut}}
		for _, m := range members[1:] {
			t, n := cut(m.Text, maxRunes)
			nt := string(k.Normalize(nil, m.Text))
			set := setOf(nt)
			shared := jaccard.Intersection(keptSet, set)
			same := ""
			switch {
			case m.Text == members[0].Text:
				same = "identical text"
			case nt == keptNorm:
				same = "same text after normalisation"
			}
			c.Removed = append(c.Removed, member{
				Same: same,
				ID:   human.ID(m.ID), Kept: m.Kept,
				Jaccard:   strconv.FormatFloat(jaccard.Set(keptSet, set), 'f', 3, 64),
				Shared:    fmt.Sprintf("%d of %d shingles shared", shared, len(keptSet)+len(set)-shared),
				Edits:     DiffText(keptText, t),
				Truncated: n,
			})
		}
		out = append(out, c)
	}
	return out, nil
}

// cut returns s shortened to n runes and how many runes it dropped.
func cut(s string, n int) (string, int) {
	i, k := 0, 0
	for i < len(s) && k < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	if i == len(s) {
		return s, 0
	}
	return s[:i], utf8.RuneCountInString(s[i:])
}
