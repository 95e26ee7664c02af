package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// indexParamFlags are the method parameters of `index create`: the
// shared sketch flag groups (flags.go) plus --method and --blocks. On add
// and query the same flags are optional checks: given, they must match the
// index.
type indexParamFlags struct {
	method string
	sketch sketchFlags
	family string // --family, the old name of --minhash-family
	blocks int
}

func (f *indexParamFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.method, "method", "minhash", "minhash or simhash")
	f.sketch.register(fs, groupThreshold|groupShingle|groupMinHash|groupSeed|groupSimHash)
	// An index is minhash or simhash: the shared help's list of methods
	// that read --seed would name methods no index has.
	fs.Lookup("seed").Usage = "seed of the shingle and minhash or simhash hashes, fixed when the index is made (0: the fixed defaults); given to an existing index, it must be the index's"
	fs.Lookup("weights").Usage = "simhash: feature weights: set (each distinct shingle weighs 1), count (a shingle repeated c times weighs c) or sublinear (1 + ln c); an index has no tfidf, which needs a table learned over a corpus"
	fs.StringVar(&f.family, "family", "", "the old name of --minhash-family")
	_ = fs.MarkDeprecated("family", "use --minhash-family")
	fs.IntVar(&f.blocks, "blocks", 0, "simhash: blocks of the permuted-table design (0: chosen for a million documents); given to an existing index, 0 or the index's own")
	// 0 is "choose" for --bands, --rows and --blocks: the index chose when
	// it was created, so on add, query and upgrade 0 is the index's own
	// value (checkAgainst), as leaving the flag out is.
	for _, name := range []string{"bands", "rows"} {
		fs.Lookup(name).Usage += "; given to an existing index, 0 or the index's own"
	}
}

// chosenWhenZero are the parameter flags whose 0 asks index create to
// choose the value: given to an existing index, 0 is the value it chose.
// (--seed 0 is not among them: it is a value, the fixed default seeds.)
var chosenWhenZero = map[string]bool{"bands": true, "rows": true, "blocks": true}

// spec builds the index's sketch specification from the flags. Only the
// flags of the chosen method are used.
func (f *indexParamFlags) spec() (sketch.Spec, error) {
	if f.method == sharedflags.Cascade {
		return sketch.Spec{}, usageErr("--method cascade: an index holds the sketches of its method; the cascade is a dedup run's (neardup dedup --method cascade): create a minhash or simhash index")
	}
	m, err := sketch.ParseMethod(f.method)
	if err != nil || m != sketch.MinHash && m != sketch.SimHash {
		return sketch.Spec{}, usageErr("--method %q: want minhash or simhash", f.method)
	}
	if f.family != "" {
		f.sketch.Family = f.family
	}
	sp, err := f.sketch.spec(m)
	if err != nil {
		return sketch.Spec{}, err
	}
	if m == sketch.SimHash {
		sp.SimHash.Blocks = f.blocks
		// An index sketches each document alone, with no IDF table to
		// read: such an index was made, and every add then failed.
		if sp.SimHash.Weights == sketch.WeightTFIDF {
			return sketch.Spec{}, usageErr("--weights tfidf: an index keeps no IDF table (it sketches each document alone); give set, count or sublinear")
		}
	}
	return sp, nil
}

// checkAgainst refuses flags given on the command line that disagree with
// the stored parameters of the index at where ("--index DIR"), which the
// message names.
func (f *indexParamFlags) checkAgainst(fs *pflag.FlagSet, p sketch.Spec, where string) error {
	var diffs []string
	fs.Visit(func(fl *pflag.Flag) {
		var stored string
		switch fl.Name {
		case "method":
			stored = p.Method.String()
		case "unit":
			stored = p.Shingle.Unit.String()
		case "ngram":
			stored = fmt.Sprint(p.Shingle.N)
		case "num-perm", "bands", "rows", "threshold", "family", "minhash-family":
			if p.Method != sketch.MinHash {
				diffs = append(diffs, fmt.Sprintf("--%s applies to minhash, the index is %s", fl.Name, p.Method))
				return
			}
			m := p.MinHash
			stored = map[string]string{"num-perm": fmt.Sprint(m.NumPerm), "bands": fmt.Sprint(m.Bands), "rows": fmt.Sprint(m.Rows),
				"threshold": fmt.Sprint(p.Threshold), "family": m.Family.String(), "minhash-family": m.Family.String()}[fl.Name]
		case "bits", "distance", "blocks", "weights":
			if p.Method != sketch.SimHash {
				diffs = append(diffs, fmt.Sprintf("--%s applies to simhash, the index is %s", fl.Name, p.Method))
				return
			}
			m := p.SimHash
			stored = map[string]string{"bits": fmt.Sprint(m.Bits), "distance": fmt.Sprint(m.MaxDistance()), "blocks": fmt.Sprint(m.Blocks), "weights": m.Weights.String()}[fl.Name]
		case "seed":
			// --seed seeds the shingle hash and the method's; 0 (the
			// flag's default) means the fixed default seeds, which a
			// created index stores resolved.
			given, err := strconv.ParseUint(fl.Value.String(), 10, 64)
			if err != nil {
				return
			}
			want, have := cmp.Or(given, shingle.DefaultSeed), cmp.Or(p.Shingle.Seed, shingle.DefaultSeed)
			if want != have {
				stored := fmt.Sprintf("seed %d", have)
				if have == shingle.DefaultSeed {
					stored = "the default seed (--seed 0)"
				}
				diffs = append(diffs, fmt.Sprintf("--seed %d but the index was made with %s", given, stored))
			}
			return
		case "nfkc", "case-fold", "fold-whitespace", "fold-punct", "html", "html-all", "t2s", "stop-words":
			n := p.Normalize
			stored = fmt.Sprint(map[string]bool{"nfkc": n.NFKC, "case-fold": n.CaseFold, "fold-whitespace": n.Whitespace,
				"fold-punct": n.Punctuation, "html": n.HTML, "html-all": n.HTMLAll, "t2s": n.T2S, "stop-words": n.StopWords}[fl.Name])
		default:
			return
		}
		if fl.Value.String() != stored && !(chosenWhenZero[fl.Name] && fl.Value.String() == "0") {
			diffs = append(diffs, fmt.Sprintf("--%s %s but the index has %s", fl.Name, fl.Value.String(), stored))
		}
	})
	if len(diffs) > 0 {
		return usageErr("%s: flags that disagree with the index: %s (the parameters are fixed when the index is created; leave a flag out to use the index's own)", where, strings.Join(diffs, "; "))
	}
	return nil
}

type indexOpts struct {
	dir           string
	params        indexParamFlags
	input         inputFlags
	output        string
	check         bool
	limit         int
	dupsOnly      bool
	workers       int
	batch         int
	jsonOut       bool
	cacheMB       int
	minFreeMB     int
	idsFile       string
	ignoreMissing bool
	quiet         bool
	estimateOnly  bool // create --estimate-only
	upgrade       bool // index upgrade: runIndexStream gives the documents their sets
}

func newIndexCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Create, add to and query a persistent index",
		Long: `A persistent near-duplicate index in a directory (--index DIR), or in Redis
shared by many processes (--index redis://HOST:PORT/DB?prefix=NAME, or
redis+cluster://HOST:PORT,HOST:PORT/?prefix=NAME; docs/format/redis.md): MinHash
LSH bands or SimHash permuted tables, with every document's signature and id.
The method and its parameters (normalisation, shingles, permutations, bands,
bits, distance) are fixed by 'index create' and stored in the index; the other
commands read them from there.

  neardup index create --index DIR [--method minhash|simhash] [parameters]
  neardup index add    --index DIR [--check] INPUT...   add a corpus
  neardup index query  --index DIR INPUT... [-o F]      find the duplicates of a corpus
  neardup index remove --index DIR ID...                remove documents
  neardup index stats  --index DIR [--json]
  neardup index upgrade --index DIR INPUT...            keep shingle sets (an index made before them)
  neardup index compact --index DIR                     reclaim space after removals
  neardup index copy   --from DIR|URL --to DIR|URL       copy between a directory and Redis

The on-disk format is docs/format/store.md; the Redis layout docs/format/redis.md.

` + exitHelp,
	}
	cmd.AddCommand(newIndexCreateCmd(), newIndexAddCmd(), newIndexQueryCmd(),
		newIndexRemoveCmd(), newIndexStatsCmd(), newIndexUpgradeCmd(), newIndexCompactCmd(), newIndexCopyCmd())
	return cmd
}

func registerIndexDir(fs *pflag.FlagSet, o *indexOpts) {
	fs.StringVar(&o.dir, "index", "", indexFlagHelp)
	fs.IntVar(&o.cacheMB, "cache-mb", store.DefaultCacheSize>>20, "block cache size in MiB: with the memtables it bounds the index's memory apart from its in-memory postings (about 210 bytes per MinHash document, see index stats)")
	minFreeFlag(fs, &o.minFreeMB, "writes stop with an error")
}

// minFreeFlag registers --min-free-mb, the disk space writes must leave
// (store.Options.MinFreeBytes); below says what happens beneath it.
func minFreeFlag(fs *pflag.FlagSet, v *int, below string) {
	fs.IntVar(v, "min-free-mb", int(4*store.DefaultMemTableSize>>20), "free disk space in MiB that writes must leave on the index's file system (room for the write-ahead log and memtable flushes); below it "+below+" until space is freed")
}

func (o *indexOpts) storeOptions() store.Options {
	return store.Options{CacheSize: int64(o.cacheMB) << 20, MinFreeBytes: int64(o.minFreeMB) << 20, MemTableSize: testMemTableSize.Load()}
}

// testMemTableSize, when set by a test, is the memtable size of the
// indexes the commands open (0: the default), so that a few hundred
// documents make pebble flush.
var testMemTableSize atomic.Uint64

// indexFlagHelp is the help of --index wherever it is accepted.
const indexFlagHelp = "the index: a directory, or a Redis URL, redis://[USER@]HOST:PORT/DB?prefix=NAME for one Redis server or redis+cluster://HOST:PORT,HOST:PORT/?prefix=NAME for a Redis Cluster, rediss:// for TLS; the password from NEARDUP_REDIS_PASSWORD_FILE or NEARDUP_REDIS_PASSWORD (docs/format/redis.md) (required)"

func (o *indexOpts) openIndex(readOnly bool) (store.Index, error) {
	return o.openIndexWith(readOnly, nil)
}

// openIndexWith is openIndex with store.Options.OnFatal.
func (o *indexOpts) openIndexWith(readOnly bool, onFatal func(error)) (store.Index, error) {
	if o.dir == "" {
		return nil, usageErr("--index DIR|URL is required")
	}
	if o.cacheMB < 1 || o.minFreeMB < 1 {
		return nil, usageErr("--cache-mb %d, --min-free-mb %d: must be at least 1", o.cacheMB, o.minFreeMB)
	}
	so := o.storeOptions()
	so.ReadOnly = readOnly
	so.OnFatal = onFatal
	return openIndexAt(o.dir, so)
}

// openIndexAt opens the index at a directory or Redis URL, naming the
// problem of a location that holds none or cannot be parsed.
func openIndexAt(loc string, so store.Options) (store.Index, error) {
	s, err := store.OpenIndex(loc, so)
	switch {
	case errors.Is(err, store.ErrNotIndex):
		return nil, usageErr("--index %s: %s (create one with 'neardup index create --index %s')", redactLoc(loc), notIndexReason(loc, err), redactLoc(loc))
	case errors.Is(err, store.ErrParams):
		return nil, usageErr("--index: %s", sharedflags.Plain(err))
	}
	return s, indexErr("--index", loc, err)
}

// indexErr words a failure of the store to open or create the index at
// loc, given by flag, or one in mid-run (a Redis server lost, a disk
// full, a write failed inside the database), as the flag, the location,
// what is wrong and what to do, without the store's package words
// ("store: index server unreachable: ..."). The error still wraps err: errors.Is finds the
// store's sentinel, and the exit code is err's. A usage error, and an
// error that is not the store's, is returned as it is.
func indexErr(flag, loc string, err error) error {
	var worded *wordedErr
	if err == nil || errors.Is(err, errUsage) || errors.As(err, &worded) {
		return err
	}
	shown := redactLoc(loc)
	// cause is err's message after the sentinel's and the location's
	// words: "dial tcp ...: connection refused".
	cause := func(sentinel string) string {
		// A failure in mid-run carries what was being done before the
		// sentinel ("add: batch 3: store: ..."): only what follows it is
		// the cause.
		m := err.Error()
		if i := strings.Index(m, sentinel); i >= 0 {
			m = m[i+len(sentinel):]
		}
		m = strings.TrimLeft(m, ": ")
		for _, l := range []string{loc, shown} {
			if l != "" && strings.HasPrefix(m, l) {
				m = strings.TrimLeft(strings.TrimPrefix(m[len(l):], ":"), " ")
				break
			}
		}
		return strings.TrimPrefix(m, "pebble: ")
	}
	var msg string
	switch {
	case errors.Is(err, store.ErrUnreachable):
		msg = fmt.Sprintf("the Redis server does not answer (%s): start it, or check the host and port of the URL", cause(store.ErrUnreachable.Error()))
	case errors.Is(err, store.ErrLocked):
		msg = "the index is already open " + cause(store.ErrLocked.Error())
	case errors.Is(err, store.ErrVersion):
		msg = fmt.Sprintf("the index %s: use a newer neardup", cause(store.ErrVersion.Error()))
	case errors.Is(err, store.ErrDiskFull):
		msg = "not enough free disk space for the index: " + cause(store.ErrDiskFull.Error())
	case errors.Is(err, store.ErrFailed):
		msg = fmt.Sprintf("a write to the index failed (%s); the documents added before it are in the index: run the command again, which reopens it, to write again", cause(store.ErrFailed.Error()))
	case errors.Is(err, store.ErrCorrupt):
		msg = fmt.Sprintf("the index is damaged (%s): restore it from a copy, or build it again with 'neardup index create' and 'neardup index add'", cause(store.ErrCorrupt.Error()))
	case strings.HasPrefix(err.Error(), "store: open "+loc+": ") && (errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS)):
		msg = fmt.Sprintf("the index folder cannot be written (%s): adding, removing, upgrading and compacting need to write in it; 'index query', 'index stats' and 'dedup --against' only read it", cause("store: open"))
	case strings.HasPrefix(err.Error(), "store: open "+loc+": "):
		msg = fmt.Sprintf("the index cannot be opened (%s): if it is damaged, restore it from a copy, or build it again with 'neardup index create' and 'neardup index add'", cause("store: open"))
	case strings.HasPrefix(err.Error(), "store: create "+loc+": "):
		msg = fmt.Sprintf("the index cannot be created: %s", cause("store: create"))
	default:
		return err
	}
	return &wordedErr{msg: flag + " " + shown + ": " + msg, err: err}
}

// addErr words a document's own failure to be added (its id is already
// in the index, or is too long) for the record's message, which already
// names the file, line and id: without the store's package name and
// without the id again. It wraps err (hints.go looks for
// store.ErrDuplicateID).
func addErr(err error) error {
	if errors.Is(err, store.ErrDuplicateID) {
		return &wordedErr{msg: "the id is already in the index", err: err}
	}
	return &wordedErr{msg: sharedflags.Plain(err), err: err}
}

// wordedErr is an error said in other words than its cause's, which it
// wraps (for errors.Is and the exit code).
type wordedErr struct {
	msg string
	err error
}

func (e *wordedErr) Error() string { return e.msg }
func (e *wordedErr) Unwrap() error { return e.err }

// notIndexReason says why loc holds no index, in words: a path that does
// not exist, a file, a directory without one, or the store's reason (a
// Redis prefix without an index).
func notIndexReason(loc string, err error) string {
	if !store.IsURL(loc) {
		st, serr := os.Stat(loc)
		switch {
		case errors.Is(serr, fs.ErrNotExist):
			return "no such directory"
		case serr == nil && !st.IsDir():
			return "a file, not an index directory"
		case serr == nil:
			return "the directory holds no index"
		}
	}
	return "no index there: " + strings.TrimPrefix(strings.TrimPrefix(err.Error(), store.ErrNotIndex.Error()), ": ")
}

func newIndexCreateCmd() *cobra.Command {
	o := &indexOpts{}
	cmd := &cobra.Command{
		Use:   "create --index DIR [flags]",
		Short: "Create an empty index with a method and its parameters",
		Long: `Create an empty index in DIR (created if missing). The defaults are those of
'neardup dedup': word 5-shingles, MinHash with 128 slots (one-permutation
hashing, --family oph), a duplicate at estimated similarity 0.8, and the
banding chosen from --threshold as dedup and lsh-params choose it: the
cheapest that makes a pair at the threshold a candidate with probability
0.95 (13 bands of 7 rows at 0.8, 23 x 3 at 0.5). --bands and --rows set it
by hand; a banding that finds fewer than half of the pairs at the threshold
is refused. --method simhash makes 64-bit fingerprints matched within
Hamming distance 3. Indexes keep the parameters they were created with
(those created before these defaults: word 3-shingles, 16 x 8).

A MinHash index keeps every document's shingle set (about 7.3 bytes a
shingle, docs/bench/store.md) and decides a candidate as 'neardup dedup'
does: an estimate far below the threshold rejects it, the exact Jaccard
similarity of the two sets decides the rest, and is the similarity
reported. Check-and-add over a corpus in input order then keeps what
'neardup dedup --cluster leader --keep first' keeps. --estimate-only makes
the smaller index of earlier versions, which decides by the estimate alone.

The band or table postings are kept in memory, rebuilt from the stored
documents when the index is opened: about 14 bytes per band per MinHash
document, 180 with 13 bands ('neardup index stats' reports it).

` + exitHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runIndexCreate(cmd, o)
		},
	}
	registerIndexDir(cmd.Flags(), o)
	o.params.register(cmd.Flags())
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print the stored parameters as JSON")
	cmd.Flags().BoolVar(&o.estimateOnly, "estimate-only", false, "minhash: keep no shingle sets and decide candidates by the signature estimate alone (a smaller index, less precise near the threshold)")
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print no summary (as add, query, remove and copy)")
	return cmd
}

func runIndexCreate(cmd *cobra.Command, o *indexOpts) error {
	if o.dir == "" {
		return usageErr("--index DIR|URL is required")
	}
	p, err := o.params.spec()
	if err != nil {
		return err
	}
	if err := checkMethodFlags(cmd.Flags(), p.Method.String()); err != nil {
		return err
	}
	if o.estimateOnly && p.Method != sketch.MinHash {
		return usageErr("--estimate-only: only a minhash index keeps shingle sets; a %s index decides by its fingerprints", p.Method)
	}
	so := o.storeOptions()
	so.EstimateOnly = o.estimateOnly
	s, err := store.CreateIndex(o.dir, p, so)
	if err != nil {
		return createErr(o.dir, err)
	}
	p = s.Spec()
	if err := s.Close(); err != nil {
		return err
	}
	if o.jsonOut {
		return writeJSON(cmd.OutOrStdout(), p)
	}
	if o.quiet {
		return nil
	}
	_, err = fmt.Fprintf(cmd.ErrOrStderr(), "created %s index in %s (%s)\n", p.Method, redactLoc(o.dir), describeParams(p))
	return err
}

// createErr words a refusal of store.CreateIndex: parameters it refuses
// and an existing index are usage errors; a banding given by hand that
// misses most pairs at the threshold (store.MinBandingRecall) names the
// flags that gave it; an existing index names --index and what to do.
func createErr(loc string, err error) error {
	switch {
	case errors.Is(err, store.ErrBanding):
		return usageErr("--bands, --rows: %s; omit --bands and --rows to get the default", strings.TrimPrefix(sharedflags.Plain(err), "invalid parameters: "))
	case errors.Is(err, store.ErrExists):
		other := "another folder"
		if store.IsURL(loc) {
			other = "another prefix"
		}
		loc = redactLoc(loc)
		return usageErr("--index %s: an index already exists there (add to it with 'neardup index add --index %s', or choose %s)", loc, loc, other)
	case errors.Is(err, store.ErrParams):
		return usageErr("--index: %s", sharedflags.Plain(err))
	case !store.IsURL(loc) && errors.Is(err, syscall.ENOTDIR):
		// A file where the folder would be (or on its path): exit 1 and
		// "mkdir F: not a directory" before, where the other index
		// commands say this with exit 2.
		return usageErr("--index %s: a file, not a folder, is in the way: give a folder for the index (it is made when missing)", loc)
	}
	return indexErr("--index", loc, err)
}

func describeParams(p sketch.Spec) string {
	sh := fmt.Sprintf("%s %d-shingles", p.Shingle.Unit, p.Shingle.N)
	if p.Method == sketch.MinHash {
		m := p.MinHash
		return fmt.Sprintf("%s, %d %s slots, %dx%d bands, threshold %v; P(candidate) at the threshold %.2f",
			sh, m.NumPerm, m.Family, m.Bands, m.Rows, p.Threshold, p.Banding().Probability(p.Threshold))
	}
	m := p.SimHash
	return fmt.Sprintf("%s, %d bits, distance %d, %d blocks, %d tables", sh, m.Bits, m.MaxDistance(), m.Blocks, p.NumKeys())
}

func newIndexAddCmd() *cobra.Command {
	o := &indexOpts{}
	cmd := &cobra.Command{
		Use:   "add --index DIR [--check] INPUT...",
		Short: "Add a corpus to the index",
		Long: `Add every document of the inputs to the index. INPUT is a file, a directory
or - for JSONL on standard input. A document whose id is already in the index
is bad input (exit code 3); with --skip-invalid it is left out and counted as
already in the index, not as an invalid record, so adding a file again adds
nothing and exits 0. With --check a document already added with the same text
is its own duplicate, not added again.

With --check each document is first checked against the index and the
documents added before it, and added only when it duplicates none of them
(check-and-add: incremental deduplication of a corpus against everything
seen so far). --output writes one JSON line per input document:
{"id","added","duplicate","matches":[{"id","similarity","distance"}]}.

Documents are written in batches (--batch); each batch is synced to disk
before the next is read, so an interrupted run leaves the index consistent
with every completed batch in it; the same command with --skip-invalid
then adds the rest (the ids already added are counted as already in the
index).

` + exitHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return indexErr("--index", o.dir, runIndexAdd(cmd, o, args)) // a server lost in mid-run too
		},
	}
	fs := cmd.Flags()
	registerIndexDir(fs, o)
	fs.BoolVar(&o.check, "check", false, "add only documents that duplicate nothing in the index (check-and-add)")
	fs.StringVarP(&o.output, "output", "o", "", "write one result line per document here (JSONL; - for stdout)")
	fs.IntVar(&o.limit, "limit", 10, "at most this many matches per document in --output (0: all)")
	o.registerStream(fs, "goroutines that normalise and sketch (0: all cores)", "documents per write batch")
	return cmd
}

// registerStream registers the flags of the commands that stream a corpus
// through the index (add, query, upgrade): workers, batch, the summary's
// form, the inputs and the optional parameter checks.
func (o *indexOpts) registerStream(fs *pflag.FlagSet, workersHelp, batchHelp string) {
	fs.IntVarP(&o.workers, "workers", "j", 0, workersHelp)
	fs.IntVar(&o.batch, "batch", 1024, batchHelp)
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print no summary and draw no progress bars")
	fs.BoolVar(&o.jsonOut, "json", false, "print the summary as JSON")
	o.input.register(fs)
	o.input.registerWalk(fs)
	o.params.register(fs)
}

func newIndexQueryCmd() *cobra.Command {
	o := &indexOpts{}
	cmd := &cobra.Command{
		Use:   "query --index DIR INPUT... [-o FILE]",
		Short: "Find the duplicates of a corpus in the index (cross-corpus dedup)",
		Long: `Query the index with every document of the inputs, without adding them.
Writes one JSON line per input document to --output (default standard
output): {"id","duplicate","matches":[{"id","similarity","distance","exact"}]},
matches best first (similarity is the Jaccard similarity for minhash: exact,
with "exact":true, when the index keeps shingle sets, as it does unless
created with --estimate-only, else the signature estimate; the fraction of
equal bits for simhash; distance is the Hamming distance for simhash and -1
for minhash).

` + exitHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return indexErr("--index", o.dir, runIndexQuery(cmd, o, args)) // a server lost in mid-run too
		},
	}
	fs := cmd.Flags()
	registerIndexDir(fs, o)
	fs.StringVarP(&o.output, "output", "o", "-", "write the results here (JSONL; - for stdout)")
	fs.IntVar(&o.limit, "limit", 10, "at most this many matches per document (0: all)")
	fs.BoolVar(&o.dupsOnly, "duplicates-only", false, "write only the documents that have duplicates")
	o.registerStream(fs, "goroutines that normalise, sketch and query (0: all cores)", "documents read at a time")
	return cmd
}

// indexSummary is what add and query report.
type indexSummary struct {
	Index      string `json:"index"`
	Documents  int64  `json:"documents"`
	Added      int64  `json:"added"`
	Duplicates int64  `json:"duplicates"`
	Skipped    int64  `json:"skipped"`
	// Present counts the documents of index add --skip-invalid whose id
	// was already in the index: read, valid, and not added.
	Present   int64 `json:"already_in_index,omitempty"`
	IndexDocs int64 `json:"index_documents"`
	// HTMLLike counts the documents that start as HTML pages in an index
	// without --html, as dedup's summary does.
	HTMLLike int64 `json:"html_like_docs,omitempty"`
	// As in dedup's summary: damaged input files, paths of input
	// directories not read.
	Damaged           []dedup.DamagedFile `json:"damaged_files,omitempty"`
	FilesSkipped      int                 `json:"files_skipped,omitempty"`
	FilesSkippedFirst []corpus.Skip       `json:"files_skipped_first,omitempty"`
	FilesExcluded     int                 `json:"files_excluded,omitempty"`
	// Upgrade is what index upgrade did.
	Upgrade *store.UpgradeResult `json:"upgrade,omitempty"`
}

// docResult is one line of the --output of add and query.
type docResult struct {
	ID        string        `json:"id"`
	Added     *bool         `json:"added,omitempty"`
	Duplicate bool          `json:"duplicate"`
	Matches   []store.Match `json:"matches"`
}

func runIndexAdd(cmd *cobra.Command, o *indexOpts, args []string) error {
	return runIndexStream(cmd, o, args, true)
}

func runIndexQuery(cmd *cobra.Command, o *indexOpts, args []string) error {
	return runIndexStream(cmd, o, args, false)
}

// runIndexStream reads the inputs in chunks and runs each through the
// index's store.Pipeline (add, check-and-add or query; index upgrade
// sketches it there and upgrades), skipping bad records as asked and
// writing the output lines and the summary.
func runIndexStream(cmd *cobra.Command, o *indexOpts, args []string, add bool) error {
	ctx := cmd.Context()
	ropts, err := o.input.options()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		return usageErr("no INPUT: give files, directories or - for standard input")
	}
	if err := o.input.checkFormatUse(args); err != nil {
		return err
	}
	if o.batch < 1 {
		return usageErr("--batch %d: must be at least 1", o.batch)
	}
	if o.limit < 0 {
		return usageErr("--limit %d: must not be negative", o.limit)
	}
	if o.workers < 0 {
		return usageErr("--workers %d: must not be negative", o.workers)
	}
	ex, err := expandInputs(args, o.input.exclude)
	if err != nil {
		return err
	}
	files := ex.Files
	if err := checkInputFormats(files, ropts); err != nil {
		return err
	}
	// Results never replace the documents they are of.
	if err := outputsNotReads([]outputFlag{{"-o", o.output}}, inputFile{"an input file", files}); err != nil {
		return err
	}
	// Said before the index is opened (and upgraded), naming the flag.
	if err := checkOutputPath("-o", o.output); err != nil {
		return err
	}
	fatal := newFatalWatch(cmd.ErrOrStderr(), o.dir, lostWords(0, o.upgrade))
	s, err := o.openIndexWith(!add, fatal.onFatal)
	if err != nil {
		return err
	}
	defer s.Close()
	folder := watchIndexFolder(o.dir)
	fatal.folder.Store(folder)
	if err := o.params.checkAgainst(cmd.Flags(), s.Spec(), "--index "+redactLoc(o.dir)); err != nil {
		return err
	}
	if w := extractionWarning("--index", o.dir, s); w != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), w)
	}
	// Pages of web archives are compared on what the index normalises:
	// their main content when it extracts the main content of HTML.
	ropts.HTMLMain = s.Spec().Normalize.HTML && !s.Spec().Normalize.HTMLAll
	var upgraded *store.UpgradeResult
	if o.upgrade {
		// Sets on first, so that the pipeline's sketchers below make them.
		if s.Spec().Method != sketch.MinHash {
			return usageErr("--index %s: a %s index keeps no shingle sets; nothing to upgrade", redactLoc(o.dir), s.Spec().Method)
		}
		r, err := s.Upgrade(nil)
		if err != nil {
			return err
		}
		upgraded = &r
	}
	pl, err := store.NewPipeline(s, o.workers)
	if err != nil {
		return err
	}

	var out *atomicfile.File
	var bw *bufio.Writer
	outPath := o.output
	if outPath != "" {
		out, err = atomicfile.Create(outPath)
		if err != nil {
			return outputErr("-o", outPath, err)
		}
		defer out.Abort()
		fatal.removeOnFatal(out)
		bw = bufio.NewWriterSize(out, 1<<16)
	}

	sum := indexSummary{Index: o.dir, FilesSkipped: len(ex.Skipped), FilesExcluded: ex.Excluded}
	sum.FilesSkippedFirst = ex.Skipped[:min(len(ex.Skipped), 10)]
	var skipErr error
	ropts.OnInvalid = func(re *corpus.RecordError) error {
		switch {
		case !o.input.skipInvalid:
			return re
		case errors.Is(re, corpus.ErrCorrupt): // a damaged file, not a bad record
			sum.Damaged = append(sum.Damaged, dedup.DamagedFileOf(re))
		default:
			sum.Skipped++
			if skipErr == nil {
				skipErr = re
			}
		}
		return nil
	}
	type item struct {
		id, text, src string
		record        int64
	}
	chunk := make([]item, 0, o.batch)
	prog := newProgress(ctx, cmd.ErrOrStderr(), o.quiet)
	if prog == nil {
		prog = dedup.NoProgress()
	}
	defer prog.Done()
	stage := "query"
	if add {
		stage = "add"
	}
	prog.Stage(stage, dedup.EstimateDocs(files, ropts))
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// The library's pipeline: sketch in parallel (as the server does),
		// then query in parallel or write the batch.
		docs := make([]store.Doc, len(chunk))
		for i := range chunk {
			docs[i].ID = chunk[i].id
		}
		text := func(i int) string { return chunk[i].text }
		if upgraded != nil {
			pl.Sketch(docs, text)
			r, err := s.Upgrade(docs)
			if err != nil {
				return fmt.Errorf("index %s: upgrading the documents of %s: %w", redactLoc(o.dir), chunk[0].src, err)
			}
			upgraded.Add(r)
			sum.Documents += int64(len(chunk))
			prog.Advance(len(chunk), 0)
			chunk = chunk[:0]
			return nil
		}
		op := store.OpQuery
		switch {
		case add && o.check:
			op = store.OpCheckAndAdd
		case add:
			op = store.OpAdd
		}
		results, err := pl.Run(op, docs, text, o.limit)
		if errors.Is(err, store.ErrDiskFull) {
			// Worded by indexErr: "--index DIR: not enough free disk space ...".
			return fmt.Errorf("%w; the %s documents added before are in the index, which stays usable: free space (or lower --min-free-mb, the reserve) and add the rest", err, number(sum.Added))
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		for i := range chunk {
			it, r := &chunk[i], results[i]
			sum.Documents++
			// Counted as the documents are: a record --skip-invalid
			// leaves out below is neither.
			html := !s.Spec().Normalize.HTML && dedup.LooksLikeHTML(it.text)
			if html {
				sum.HTMLLike++
			}
			line := docResult{ID: it.id, Matches: r.Matches}
			if add {
				if r.Err != nil {
					re := &corpus.RecordError{File: it.src, Record: it.record, ID: it.id, Err: fmt.Errorf("%w: %w", errInvalidData, addErr(r.Err))}
					if !o.input.skipInvalid {
						return re
					}
					// An id already in the index is not an invalid
					// record: the run that added it may have been
					// interrupted, and adding the same file again is
					// a retry that adds the rest.
					if errors.Is(r.Err, store.ErrDuplicateID) {
						sum.Present++
						continue
					}
					sum.Skipped++
					sum.Documents--
					if html {
						sum.HTMLLike--
					}
					if skipErr == nil {
						skipErr = re
					}
					continue
				}
				added := r.Added
				line.Added = &added
				if added {
					sum.Added++
				}
			} else if r.Err != nil {
				return fmt.Errorf("%s:%d: id %q: %w", it.src, it.record, it.id, r.Err)
			}
			line.Duplicate = len(line.Matches) > 0
			if line.Duplicate {
				sum.Duplicates++
			}
			if line.Matches == nil {
				line.Matches = []store.Match{}
			}
			if bw != nil && (!o.dupsOnly || line.Duplicate) {
				b, err := json.Marshal(line)
				if err != nil {
					return err
				}
				bw.Write(b)
				if err := bw.WriteByte('\n'); err != nil {
					return err
				}
			}
		}
		prog.Advance(len(chunk), 0)
		chunk = chunk[:0]
		fatal.lost(lostWords(sum.Added, upgraded != nil))
		if h := testHookIndexMidRun.Load(); h != nil {
			(*h)(o.dir)
		}
		return nil
	}
	// The documents whose id is their FILE:LINE (no --id-field in the
	// record), for the warning of an --id-field given on the command line.
	var read, fromPosition int
	var firstFromPosition string
	e := cmd.InOrStdin()
	for _, f := range files {
		var r corpus.Reader
		if f == "-" {
			r = corpus.NewStream(e, "-", ropts)
		} else if r, err = corpus.Open(f, ropts); err != nil {
			return err
		}
		for r.Next() {
			d := r.Doc()
			read++
			// A line of plain text has no id to lack: --id-field only
			// names the key of its record's id.
			if d.ID == d.Source+":"+strconv.FormatInt(d.Record, 10) && !corpus.ReadsLines(f, ropts) {
				if fromPosition == 0 {
					firstFromPosition = d.ID
				}
				fromPosition++
			}
			chunk = append(chunk, item{id: strings.Clone(d.ID), text: strings.Clone(d.Text), src: d.Source, record: d.Record})
			if len(chunk) == o.batch {
				if err := flush(); err != nil {
					r.Close()
					return err
				}
			}
			if err := ctx.Err(); err != nil {
				r.Close()
				return err
			}
		}
		err := r.Err()
		r.Close()
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if bw != nil {
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	sum.IndexDocs = s.Len()
	sum.Upgrade = upgraded
	// Looked at before the close (whose flush fails in words of pebble's
	// files when the folder is gone) and after it: a folder removed in
	// between loses what the close wrote too.
	gone := func() error {
		if !add || !folder.gone() {
			return nil
		}
		return folder.goneErr(lostWords(sum.Added, upgraded != nil))
	}
	if err := gone(); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		if err := gone(); err != nil {
			return err
		}
		return err
	}
	prog.Done()
	if err := gone(); err != nil {
		return err
	}
	// The -o file is put in place only now: a run whose documents were
	// lost with the folder leaves no file saying they were added.
	if out != nil {
		if err := out.Commit(); err != nil {
			return err
		}
	}
	if err := printIndexSummary(cmd.ErrOrStderr(), o, sum, add, skipErr); err != nil {
		return err
	}
	if cmd.Flags().Changed("id-field") {
		warnIDsFromPosition(cmd.ErrOrStderr(), o.input.fields.IDField, fromPosition, read, firstFromPosition)
	}
	// As dedup: a run that skipped every record read nothing (exit 3).
	var first []string
	if skipErr != nil {
		first = []string{skipErr.Error()}
	}
	if err := allSkipped(sum.Documents, sum.Skipped, first); err != nil {
		return err
	}
	return inputLost(sum.Damaged, o.input.allowTruncated)
}

func printIndexSummary(w io.Writer, o *indexOpts, s indexSummary, add bool, firstSkip error) error {
	if o.quiet {
		return nil
	}
	if o.jsonOut {
		return writeJSON(w, s)
	}
	var err error
	if u := s.Upgrade; u != nil {
		_, err = fmt.Fprintf(w, "read %s: %s given their shingle sets, %s had them, %s not in the index, %s whose text gives another signature (left estimate-only), %s without shingles, %s skipped; the index holds %s and keeps the sets of new documents\n",
			plural(int(s.Documents), "document"), number(u.Upgraded), number(u.Already), number(u.Missing), number(u.Changed), number(u.Empty), number(s.Skipped), number(s.IndexDocs))
	} else if add {
		present := ""
		if s.Present > 0 {
			present = fmt.Sprintf(", %s already in the index", number(s.Present))
		}
		_, err = fmt.Fprintf(w, "added %s of %s documents (%s duplicates%s, %s skipped); the index holds %s\n",
			number(s.Added), number(s.Documents), number(s.Duplicates), present, number(s.Skipped), number(s.IndexDocs))
	} else {
		_, err = fmt.Fprintf(w, "queried %s: %s %s duplicates in the index (%s), %s skipped\n",
			plural(int(s.Documents), "document"), number(s.Duplicates), agree(int(s.Duplicates), "has", "have"), plural(int(s.IndexDocs), "document"), number(s.Skipped))
	}
	if err == nil && firstSkip != nil {
		_, err = fmt.Fprintf(w, "first skipped: %v\n", firstSkip)
	}
	if err == nil && s.HTMLLike > 0 {
		_, err = fmt.Fprintf(w, "%s %s like HTML pages (<!DOCTYPE html> or <html>): an index created with --html compares their main content, without the markup and the site's template (this index compares the markup too)\n", plural(int(s.HTMLLike), "document"), agree(int(s.HTMLLike), "starts", "start"))
	}
	printInputNotes(w, &dedup.Stats{Damaged: s.Damaged, FilesSkipped: s.FilesSkipped,
		FilesSkippedFirst: s.FilesSkippedFirst, FilesExcluded: s.FilesExcluded})
	return err
}

func newIndexRemoveCmd() *cobra.Command {
	o := &indexOpts{}
	cmd := &cobra.Command{
		Use:   "remove --index DIR [ID...] [--ids-file F]",
		Short: "Remove documents from the index by id",
		Long: `Remove the documents with the given ids (arguments, and/or one id per line of
--ids-file, - for standard input). An id not in the index is an error (exit
code 3) unless --ignore-missing; the ids before it are removed.

` + exitHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return indexErr("--index", o.dir, runIndexRemove(cmd, o, args)) // a server lost in mid-run too
		},
	}
	fs := cmd.Flags()
	registerIndexDir(fs, o)
	fs.StringVar(&o.idsFile, "ids-file", "", "read ids from this file, one per line (- for standard input)")
	fs.BoolVar(&o.ignoreMissing, "ignore-missing", false, "skip ids that are not in the index")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print no summary and draw no progress bars")
	return cmd
}

func runIndexRemove(cmd *cobra.Command, o *indexOpts, args []string) error {
	ids := append([]string(nil), args...)
	// where[i] names ids[i] for a message: its argument or its line.
	where := make([]string, 0, len(ids))
	for i := range args {
		where = append(where, fmt.Sprintf("argument %d", i+1))
	}
	if o.idsFile != "" {
		var r io.Reader
		if o.idsFile == "-" {
			r = cmd.InOrStdin()
		} else {
			f, err := os.Open(o.idsFile)
			if err != nil {
				return usageErr("--ids-file: %v", err)
			}
			defer f.Close()
			r = f
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for lineNo := 1; sc.Scan(); lineNo++ {
			if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
				ids = append(ids, line)
				where = append(where, fmt.Sprintf("--ids-file %s line %d", o.idsFile, lineNo))
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("--ids-file %s: %w", o.idsFile, err)
		}
	}
	if len(ids) == 0 {
		return usageErr("no ids to remove: give ids as arguments or --ids-file")
	}
	s, err := o.openIndex(false)
	if err != nil {
		return err
	}
	defer s.Close()
	var removed, missing int
	for i, id := range ids {
		if err := cmd.Context().Err(); err != nil {
			return err
		}
		err := s.Remove(id)
		switch {
		case err == nil:
			removed++
		case errors.Is(err, store.ErrNotFound) && o.ignoreMissing:
			missing++
		case errors.Is(err, store.ErrNotFound):
			// The ids before it stay removed: say so, and how to go on.
			return fmt.Errorf("%w: %s: %v (%s removed before it, %s not tried; --ignore-missing skips ids not in the index)",
				errInvalidData, where[i], sharedflags.Plain(err), number(removed), number(len(ids)-i-1))
		case errors.Is(err, store.ErrInvalidID) && id == "":
			return fmt.Errorf("%w: %s: an empty id", errInvalidData, where[i])
		case errors.Is(err, store.ErrInvalidID):
			return fmt.Errorf("%w: %s: %s", errInvalidData, where[i], sharedflags.Plain(err))
		default:
			return err
		}
	}
	n := s.Len()
	if err := s.Close(); err != nil {
		return err
	}
	if o.quiet {
		return nil
	}
	_, err = fmt.Fprintf(cmd.ErrOrStderr(), "removed %s (%s not found); the index holds %s\n", plural(removed, "document"), number(missing), number(n))
	return err
}

func newIndexStatsCmd() *cobra.Command {
	o := &indexOpts{}
	cmd := &cobra.Command{
		Use:   "stats --index DIR [--json]",
		Short: "Print the index's parameters, size and disk use",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return indexErr("--index", o.dir, runIndexStats(cmd, o)) // a server lost in mid-run too
		},
	}
	registerIndexDir(cmd.Flags(), o)
	cmd.Flags().BoolVar(&o.jsonOut, "json", false, "print JSON")
	return cmd
}

func runIndexStats(cmd *cobra.Command, o *indexOpts) error {
	s, err := o.openIndex(true)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats()
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.jsonOut {
		return writeJSON(w, st)
	}
	if st.Backend == "redis" {
		_, err = fmt.Fprintf(w, "index:        %s (redis format %d)\nmethod:       %s\nparameters:   %s\ndocuments:    %s\nredis memory: %s bytes (used_memory of the servers; %.1f bytes per document)\n",
			st.Dir, st.FormatVersion, st.Spec.Method, describeParams(st.Spec), number(st.Docs), number(int64(st.RedisUsedBytes)), st.BytesPerDoc)
		if err == nil {
			_, err = fmt.Fprintf(w, "durability:   %s\n", st.RedisDurability)
		}
		if err == nil {
			err = printDecision(w, st)
		}
		if err == nil {
			err = printExtraction(w, st)
		}
		if warn := store.DurabilityWarning(st.RedisDurability); warn != "" && err == nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "neardup: warning: %s\n", warn)
		}
		return err
	}
	_, err = fmt.Fprintf(w, "index:        %s (format %d)\nmethod:       %s\nparameters:   %s\ndocuments:    %s\ndisk:         %s bytes (%.1f bytes per document)\nmemory:       %s bytes of postings (%.1f bytes per document) + block cache and memtables (--cache-mb)\n",
		st.Dir, st.FormatVersion, st.Spec.Method, describeParams(st.Spec), number(st.Docs), number(int64(st.DiskBytes)), st.BytesPerDoc, number(int64(st.PostingsBytes)), st.PostingsBytesPerDoc)
	if err == nil {
		err = printDecision(w, st)
	}
	if err == nil {
		err = printExtraction(w, st)
	}
	return err
}

// printDecision says how the index decides a candidate: exactly (it keeps
// shingle sets) or by the estimate alone, and how to change that.
func printDecision(w io.Writer, st store.Stats) error {
	var err error
	switch {
	case st.Spec.Method != sketch.MinHash:
		return nil
	case st.Sets:
		_, err = fmt.Fprintf(w, "decision:     exact: shingle sets kept; a candidate is a duplicate when the exact Jaccard similarity of the sets is at least %v, as in 'neardup dedup' (an estimate far below rejects it first)\n", st.Spec.Threshold)
	default:
		_, err = fmt.Fprintf(w, "decision:     estimate only: no shingle sets (an index made before they were kept, or with --estimate-only); 'neardup index upgrade --index %s INPUT...' adds them from the indexed texts\n", redactLoc(st.Dir))
	}
	return err
}

func newIndexCompactCmd() *cobra.Command {
	o := &indexOpts{}
	cmd := &cobra.Command{
		Use:   "compact --index DIR",
		Short: "Compact the index, reclaiming the space of removed documents",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return indexErr("--index", o.dir, runIndexCompact(cmd.Context(), cmd, o)) // a server lost in mid-run too
		},
	}
	registerIndexDir(cmd.Flags(), o)
	cmd.Flags().BoolVarP(&o.quiet, "quiet", "q", false, "print no summary (as add, query, remove and copy)")
	return cmd
}

func runIndexCompact(ctx context.Context, cmd *cobra.Command, o *indexOpts) error {
	x, err := o.openIndex(false)
	if err != nil {
		return err
	}
	defer x.Close()
	s, ok := x.(*store.Store)
	if !ok {
		return usageErr("--index %s: compact applies to an index directory; Redis frees the memory of removed documents at once", o.dir)
	}
	// The folder's bytes, not pebble's usage: that counts the files a
	// compaction made obsolete until they are deleted in the
	// background, and reported a compaction that freed half the folder
	// as one that grew it.
	before, _ := folderBytes(o.dir)
	if err := s.Compact(ctx); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	if o.quiet {
		return nil
	}
	after, err := folderBytes(o.dir)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.ErrOrStderr(), "compacted %s: %d -> %d bytes\n", o.dir, before, after)
	return err
}

// folderBytes is the size of the files in the index folder dir
// (store.FolderBytes, the disk_bytes of index stats and /v1/stats).
func folderBytes(dir string) (int64, error) { return store.FolderBytes(dir) }
