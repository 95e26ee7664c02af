package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/tempfile"
)

// Document ranks. A document's rank is its place in the input order of
// `neardup dedup`: files in sorted name order, then records in file
// order. It is packed as file<<rankFileShift | record (record counts from
// 0), so comparing ranks compares input order without counting the
// records of earlier files: 2^23 files of up to 2^40 records each.
const (
	rankFileShift = 40
	maxFiles      = 1 << 23
	maxRecords    = 1 << rankFileShift
)

func rankOf(file, record int64) int64 { return file<<rankFileShift | record }

func fileOfRank(r int64) int64 { return r >> rankFileShift }

func recordOfRank(r int64) int64 { return r & (maxRecords - 1) }

// fileTask is one input file to read.
type fileTask struct {
	Index int64
	Path  string
}

// readOptions are the reader settings a worker needs (corpus.Options
// without its callback, which does not travel).
type readOptions struct {
	TextField   string
	IDField     string
	MaxDocBytes int
	HTMLMain    bool
	// StreamFormat is the format of the files whose names give none
	// (Options.StreamFormat).
	StreamFormat string
	// SkipInvalid skips bad records (Options.SkipInvalid).
	SkipInvalid bool
}

// readOptionsOf returns the reader settings of a run of opts: those
// `neardup dedup` reads with (dedup.Options.ReaderOptions, which sets
// HTMLMain under --html without --html-all). HTMLMain matters to the web
// archive readers only, which the pipeline does not use (supported): with
// it, a reader added for them reads as `neardup dedup` does.
func readOptionsOf(opts Options) (readOptions, error) {
	ro, err := opts.Config.ReaderOptions(corpus.Options{TextField: opts.TextField, IDField: opts.IDField, MaxDocBytes: opts.MaxDocBytes})
	if err != nil {
		return readOptions{}, err
	}
	switch opts.StreamFormat {
	case "", corpus.StreamJSONL, corpus.StreamText:
	default:
		return readOptions{}, fmt.Errorf("--format %q: want jsonl or txt (it applies to files whose names give no format; other files go by their names)", opts.StreamFormat)
	}
	return readOptions{TextField: ro.TextField, IDField: ro.IDField, MaxDocBytes: ro.MaxDocBytes, HTMLMain: ro.HTMLMain, StreamFormat: opts.StreamFormat, SkipInvalid: opts.SkipInvalid}, nil
}

// corpus returns the reader options. With SkipInvalid a bad record is
// skipped, and told to onSkip when it is not nil; every read of a file
// skips the same records, so ranks agree. A damaged gzip or zstd stream
// (corpus.ErrCorrupt) is not skipped: the run stops at it (exit 3), where
// `neardup dedup --skip-invalid` reads the file up to the damage and
// exits 5 (or 0 with --allow-truncated), which the pipeline does not do.
func (o readOptions) corpus(onSkip func(*corpus.RecordError)) corpus.Options {
	c := corpus.Options{TextField: o.TextField, IDField: o.IDField, MaxDocBytes: o.MaxDocBytes, HTMLMain: o.HTMLMain, StreamFormat: o.StreamFormat}
	if o.SkipInvalid {
		c.OnInvalid = func(e *corpus.RecordError) error {
			if errors.Is(e, corpus.ErrCorrupt) {
				return fmt.Errorf("%w; --skip-invalid skips bad records, not a damaged file, in neardup-beam: leave the file out, or run neardup dedup --skip-invalid, which reads it up to the damage", e)
			}
			if onSkip != nil {
				onSkip(e)
			}
			return nil
		}
	}
	return c
}

// supported reports whether the pipeline reads name: JSONL (.jsonl,
// .json, .ndjson, plain or .gz or .zst) and Parquet, and, when stream is
// not "" (--format), a name that gives no format (data.zst, corpus.data),
// read in stream as `neardup dedup` reads it.
func supported(name, stream string) bool {
	if stream != "" && givesNoFormat(name) {
		return true
	}
	n := strings.ToLower(name)
	n = strings.TrimSuffix(strings.TrimSuffix(n, ".gz"), ".zst")
	if n != strings.ToLower(name) && strings.HasSuffix(n, ".parquet") {
		return false // a Parquet file is not compressed as a whole
	}
	for _, ext := range []string{".jsonl", ".json", ".ndjson", ".parquet"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// givesNoFormat reports whether name gives no format of its own: one
// that --format applies to (corpus.CheckFormat refuses it, and it would
// read it in a format given).
func givesNoFormat(name string) bool {
	return corpus.CheckFormat(name) != nil && corpus.CheckFormatWith(name, corpus.Options{StreamFormat: corpus.StreamJSONL}) == nil
}

// expandInputs lists the files of the globs through Beam's file systems,
// sorted by name and without repeats. A glob that matches nothing, or a
// file the pipeline cannot read, is an error naming it; so is a --format
// (stream) that no file is read in, as `neardup dedup` refuses it.
func expandInputs(ctx context.Context, globs []string, stream string) ([]string, error) {
	if len(globs) == 0 {
		return nil, fmt.Errorf("%w: no --input", ErrUsage)
	}
	var files []string
	for _, g := range globs {
		fs, err := filesystem.New(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", g, err)
		}
		names, err := fs.List(ctx, g)
		fs.Close()
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", g, err)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%w: --input %s matches no file", ErrUsage, g)
		}
		for _, n := range names {
			if !supported(n, stream) {
				hint := ""
				if givesNoFormat(n) {
					hint = ": rename it, or give its format with --format jsonl or --format txt"
				}
				return nil, fmt.Errorf("%w: --input %s: %s is not JSONL (.jsonl, .json, .ndjson, optionally .gz or .zst) or Parquet%s", ErrUsage, g, n, hint)
			}
		}
		files = append(files, names...)
	}
	if stream != "" && !slices.ContainsFunc(files, givesNoFormat) {
		return nil, fmt.Errorf("%w: --format %s applies to files whose names give no format (data.zst, corpus.data), and no input is one; files with a format in their names go by it: rename the file", ErrUsage, stream)
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) > maxFiles {
		return nil, fmt.Errorf("%w: %d input files, at most %d", ErrUsage, len(files), maxFiles)
	}
	return files, nil
}

// openDocs opens one input file through its Beam file system with the
// core corpus readers: JSONL (compression recognised by its first bytes,
// as `neardup dedup` does) or Parquet. A Parquet file needs random
// access: a file system whose reader is not an io.ReaderAt (gs://, s3://)
// is copied to a local temporary file first. close releases everything.
func openDocs(ctx context.Context, path string, opts corpus.Options) (r corpus.Reader, close func() error, err error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		fs.Close()
		return nil, nil, err
	}
	if !strings.HasSuffix(strings.ToLower(path), ".parquet") {
		if !givesNoFormat(path) {
			opts.StreamFormat = "" // JSONL, as its name says
		}
		// The size words a damaged stream as neardup dedup does ("of
		// 15160 (7580 bytes unread)"); unknown, it is left out.
		size, err := fs.Size(ctx, path)
		if err != nil {
			size = -1
		}
		jr := corpus.NewStreamSize(rc, path, size, opts)
		return jr, func() error { jr.Close(); rc.Close(); return fs.Close() }, nil
	}
	size, err := fs.Size(ctx, path)
	if err != nil {
		rc.Close()
		fs.Close()
		return nil, nil, err
	}
	ra, ok := rc.(io.ReaderAt)
	var tmp *os.File
	if !ok {
		tmp, err = tempfile.Create("", parquetPrefix, parquetSuffix)
		if err == nil {
			_, err = io.Copy(tmp, rc)
		}
		if err != nil {
			rc.Close()
			fs.Close()
			if tmp != nil {
				tmp.Close()
				os.Remove(tmp.Name())
			}
			return nil, nil, fmt.Errorf("%s: copying to a local file: %w", path, err)
		}
		ra = tmp
	}
	pr := corpus.NewParquet(ra, size, path, opts)
	return pr, func() error {
		pr.Close()
		rc.Close()
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
		return fs.Close()
	}, nil
}

// eachDoc calls fn for every record of the file, with its rank. A bad
// record (the reader's *corpus.RecordError) is marked as bad input data
// (invalidData), which Run returns as an *InvalidDataError.
func eachDoc(ctx context.Context, t fileTask, opts corpus.Options, fn func(rank int64, d *corpus.Document) error) error {
	r, closeFn, err := openDocs(ctx, t.Path, opts)
	if err != nil {
		return err
	}
	defer closeFn()
	var rec int64
	for r.Next() {
		if rec >= maxRecords {
			return fmt.Errorf("%s: more than %d records", t.Path, int64(maxRecords))
		}
		if err := fn(rankOf(t.Index, rec), r.Doc()); err != nil {
			return err
		}
		rec++
		if rec&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	return invalidData(r.Err())
}
