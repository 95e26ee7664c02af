package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/store"
)

// DedupConfig parses args, the flags of `neardup dedup` without INPUT
// (e.g. "--threshold=0.7", "--unit=char"), exactly as the command does,
// and returns the run's Options and its Input without files: reader
// options, --skip-invalid and --examples. It is for programs that run
// dedup.Run in-process on the command line's terms (the Python binding,
// python/capi), so that the same flags give the same clusters. The flags
// that name files or change what is read (--output, --clusters, --pairs,
// --stats, --report, --options-json, --against, --resume, --sample,
// --tmp-dir, the profiles, --format, --exclude and the staged job's
// --executor, --work, --tasks and --task-memory) are refused: such a caller sets
// dedup.Outputs itself. Errors read as the command's usage errors do.
func DedupConfig(args []string) (dedup.Options, dedup.Input, error) {
	o := &dedupOpts{}
	fs := newDedupCmdOpts(&env{}, o).Flags()
	if err := fs.Parse(args); err != nil {
		return dedup.Options{}, dedup.Input{}, usageErr("%v", err)
	}
	if fs.NArg() > 0 {
		return dedup.Options{}, dedup.Input{}, usageErr("unexpected argument %q: give flags only", fs.Arg(0))
	}
	for _, name := range []string{"output", "clusters", "pairs", "stats", "report", "options-json",
		"against", "resume", "sample", "tmp-dir", "cpuprofile", "memprofile"} {
		if fs.Changed(name) {
			return dedup.Options{}, dedup.Input{}, usageErr("--%s is not an option here", name)
		}
	}
	// Flags of files and of the staged job: the caller hands the
	// documents as JSON Lines and runs in-process, so these would be
	// ignored (--format txt read each JSON line as a text).
	for _, name := range []string{"format", "exclude", "executor", "work", "tasks", "task-memory", "task-spill"} {
		if fs.Changed(name) {
			return dedup.Options{}, dedup.Input{}, usageErr("--%s is not an option here: the documents are read in this process, not from files", name)
		}
	}
	if err := checkMethodFlags(fs, o.method); err != nil {
		return dedup.Options{}, dedup.Input{}, err
	}
	cfg, err := o.config()
	if err != nil {
		return dedup.Options{}, dedup.Input{}, err
	}
	ropts, err := o.input.options()
	if err != nil {
		return dedup.Options{}, dedup.Input{}, err
	}
	in := dedup.Input{Options: ropts, SkipInvalid: o.input.skipInvalid, Examples: o.examples}
	if o.quiet {
		in.Examples = 0
	}
	return cfg, in, nil
}

// DedupError is the message `neardup dedup` prints for err, a failed
// dedup.Run's error: an invalid option named by its flag.
func DedupError(err error) error { return optionErr(err) }

// DuplicateIDsWarning is `neardup dedup`'s warning (one line, without
// its newline) that n ids are each used by more than one document, first
// the first few of them: prog names the command ("neardup"), outputs the
// outputs that name documents by id ("--clusters, --pairs"), and idField
// the field ids are read from. neardup-beam words its warning with it.
func DuplicateIDsWarning(prog, outputs string, n int, first []string, idField string) string {
	return duplicateIDsWarning(prog, outputs, n, first, idFieldFix(idField, false, true))
}

// idFieldFix is the duplicate-id warning's advice with --id-field field:
// another field, and what a document's id is without one, worded for the
// inputs read: web archives (a record without the header is named by its
// address, as corpus.WARC names it, and FILE:RECORD without one), other
// files (FILE:LINE, FILE:ROW in Parquet), or both.
func idFieldFix(field string, webArchives, others bool) string {
	switch {
	case webArchives && !others:
		return fmt.Sprintf("make the ids unique, or pass --id-field with a WARC header that is (the %q header now; a record without it is named by its WARC-Target-URI, ARC's URL, or FILE:RECORD when it has none)", field)
	case webArchives:
		return fmt.Sprintf("make the ids unique, or pass --id-field with a field that is (the %q field now; without one a document's id is FILE:LINE, FILE:ROW in Parquet, and a web archive's record is named by its WARC-Target-URI, ARC's URL, or FILE:RECORD when it has none)", field)
	}
	return fmt.Sprintf("make the ids unique, or pass --id-field with a field that is (the %q field now; without one a document's id is FILE:LINE, FILE:ROW in Parquet)", field)
}

// duplicateIDsWarning is DuplicateIDsWarning with its advice, fix.
func duplicateIDsWarning(prog, outputs string, n int, first []string, fix string) string {
	q := make([]string, len(first))
	for i, id := range first {
		q[i] = strconv.Quote(id)
	}
	more := ""
	if n > len(q) {
		more = ", ..."
	}
	return fmt.Sprintf("%s: warning: %s more than one document (%s%s): the outputs (%s) name documents by id and cannot tell them apart; %s",
		prog, countNoun(n, "id is used by", "ids are used by"), strings.Join(q, ", "), more, outputs, fix)
}

// IndexAt opens the index at loc (a directory or a Redis URL, as --index
// takes), creating it when there is none with the parameters of args, the
// flags of `neardup index create` (--method, --threshold, --num-perm,
// --ngram, ...; --cache-mb and --min-free-mb apply to either). Flags given
// for an existing index must agree with its parameters, as on `index
// add`. For the Python binding's neardup.Index.
func IndexAt(loc string, args []string) (store.Index, error) {
	o := &indexOpts{dir: loc}
	fs := pflag.NewFlagSet("index", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dir string
	fs.StringVar(&dir, "index", "", "")
	fs.IntVar(&o.cacheMB, "cache-mb", store.DefaultCacheSize>>20, "")
	minFreeFlag(fs, &o.minFreeMB, "")
	o.params.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, usageErr("%v", err)
	}
	if fs.NArg() > 0 || fs.Changed("index") {
		return nil, usageErr("give the index's location as the first argument and flags only")
	}
	if o.cacheMB < 1 || o.minFreeMB < 1 {
		return nil, usageErr("--cache-mb %d, --min-free-mb %d: must be at least 1", o.cacheMB, o.minFreeMB)
	}
	s, err := store.OpenIndex(loc, o.storeOptions())
	if err == nil {
		if err := o.params.checkAgainst(fs, s.Spec(), "index "+redactLoc(loc)); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	if !errors.Is(err, store.ErrNotIndex) {
		if errors.Is(err, store.ErrParams) {
			return nil, usageErr("%s", sharedflags.Plain(err))
		}
		return nil, indexErr("index", loc, err)
	}
	p, err := o.params.spec()
	if err != nil {
		return nil, err
	}
	// Creating: a flag the method does not read is refused as index
	// create refuses it (an existing index's parameters were checked by
	// checkAgainst above).
	if err := checkMethodFlags(fs, p.Method.String()); err != nil {
		return nil, err
	}
	s, err = store.CreateIndex(loc, p, o.storeOptions())
	if err != nil {
		return nil, createErr(loc, err)
	}
	return s, nil
}

// DedupFlags returns the flags of `neardup dedup`, as its --help lists
// them: for neardup-beam's test that the flags both have read the same.
func DedupFlags() *pflag.FlagSet {
	return newDedupCmdOpts(&env{}, &dedupOpts{}).Flags()
}
