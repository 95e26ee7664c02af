package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

type indexCopyOpts struct {
	from, to string
	batch    int
	cacheMB  int
	jsonOut  bool
	quiet    bool
}

func newIndexCopyCmd() *cobra.Command {
	o := &indexCopyOpts{}
	cmd := &cobra.Command{
		Use:   "copy --from DIR|URL --to DIR|URL",
		Short: "Copy an index between a directory and Redis (either way), resumably",
		Long: `Copy every document of the index --from into the index --to: a directory
to Redis (redis://HOST:PORT/DB?prefix=NAME, redis+cluster://...), Redis to a
directory, or between two of either. --to is created with the parameters of
--from when it holds no index; an existing --to must have the same
parameters. Documents stream in batches (--batch): memory stays small.

Resumable: documents already in --to (by id) are skipped, so a copy that
was interrupted is finished by running it again. Verified by counts: the
copy fails (exit code 1) unless every document of --from was copied or
found in --to, and --to holds at least as many documents as --from.

` + exitHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runIndexCopy(cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.from, "from", "", "the index to copy: a directory or a Redis URL (required)")
	fs.StringVar(&o.to, "to", "", "the index to copy into, created when absent: a directory or a Redis URL (required)")
	fs.IntVar(&o.batch, "batch", 1000, "documents per write")
	fs.IntVar(&o.cacheMB, "cache-mb", store.DefaultCacheSize>>20, "block cache size in MiB of a directory index")
	fs.BoolVar(&o.jsonOut, "json", false, "print the summary as JSON")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "print no summary")
	return cmd
}

// copySummary is what index copy reports.
type copySummary struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Documents  int64  `json:"documents"`
	Copied     int64  `json:"copied"`
	Present    int64  `json:"already_present"`
	SourceDocs int64  `json:"source_documents"`
	TargetDocs int64  `json:"target_documents"`
}

func runIndexCopy(cmd *cobra.Command, o *indexCopyOpts) error {
	if o.from == "" || o.to == "" {
		return usageErr("--from and --to are required")
	}
	if o.from == o.to {
		return usageErr("--from and --to are the same index")
	}
	if o.batch < 1 || o.cacheMB < 1 {
		return usageErr("--batch %d, --cache-mb %d: must be at least 1", o.batch, o.cacheMB)
	}
	so := store.Options{CacheSize: int64(o.cacheMB) << 20}
	ro := so
	ro.ReadOnly = true
	src, err := store.OpenIndex(o.from, ro)
	if err != nil {
		if errors.Is(err, store.ErrNotIndex) {
			return usageErr("--from %s: %s", redactLoc(o.from), notIndexReason(o.from, err))
		}
		if errors.Is(err, store.ErrParams) {
			return usageErr("--from: %s", sharedflags.Plain(err))
		}
		return indexErr("--from", o.from, err)
	}
	defer src.Close()
	p := src.Spec()
	dst, err := store.OpenIndex(o.to, so)
	if errors.Is(err, store.ErrNotIndex) {
		// The copy's pages were extracted as the source's were.
		co := so
		if co.Extraction = src.Extraction(); co.Extraction == 0 {
			co.Extraction = store.NoExtraction
		}
		dst, err = store.CreateIndex(o.to, p, co)
	}
	if err != nil {
		if errors.Is(err, store.ErrParams) {
			return usageErr("--to: %s", sharedflags.Plain(err))
		}
		return indexErr("--to", o.to, err)
	}
	defer dst.Close()
	if err := store.CheckSpec(dst.Spec(), p); err != nil {
		return usageErr("--to %s: %s", redactLoc(o.to), sharedflags.Plain(err))
	}
	sum := copySummary{From: o.from, To: o.to, SourceDocs: src.Len()}
	if store.IsURL(o.from) || store.IsURL(o.to) {
		sum.From, sum.To = redactLoc(o.from), redactLoc(o.to)
	}
	ctx := cmd.Context()
	docs := make([]store.Doc, 0, o.batch)
	flush := func() error {
		if len(docs) == 0 {
			return nil
		}
		rs, err := dst.AddBatch(docs)
		if err != nil {
			return err
		}
		for i, r := range rs {
			switch {
			case r.Added:
				sum.Copied++
			case errors.Is(r.Err, store.ErrDuplicateID):
				sum.Present++
			default:
				return fmt.Errorf("copy %q: %v", docs[i].ID, r.Err)
			}
		}
		docs = docs[:0]
		return nil
	}
	err = src.Each(func(id string, sk sketch.Sketch) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		sk.Sig, sk.Set = slices.Clone(sk.Sig), slices.Clone(sk.Set)
		docs = append(docs, store.Doc{ID: id, Sketch: sk})
		sum.Documents++
		if len(docs) == o.batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return err
	}
	sum.TargetDocs = dst.Len()
	if err := dst.Close(); err != nil {
		return err
	}
	if sum.Copied+sum.Present != sum.Documents || sum.Documents != sum.SourceDocs || sum.TargetDocs < sum.SourceDocs {
		return fmt.Errorf("index copy: counts disagree: %d documents read of %d in %s, %d copied and %d already present, %d in %s",
			sum.Documents, sum.SourceDocs, sum.From, sum.Copied, sum.Present, sum.TargetDocs, sum.To)
	}
	switch {
	case o.jsonOut:
		return writeJSON(cmd.OutOrStdout(), sum)
	case !o.quiet:
		_, err = fmt.Fprintf(cmd.ErrOrStderr(), "copied %s documents (%s already there) from %s to %s; it holds %s\n",
			number(sum.Copied), number(sum.Present), sum.From, sum.To, number(sum.TargetDocs))
	}
	return err
}

// redactLoc hides the password of a Redis URL.
func redactLoc(loc string) string {
	if !store.IsURL(loc) {
		return loc
	}
	return store.Redact(loc)
}

// go-redis logs failed dials and retries to the standard logger; the
// errors themselves reach the commands, which report them once.
func init() { redis.SetLogger(quietRedisLog{}) }

type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}
