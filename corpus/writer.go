package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/neardup/neardup/internal/atomicfile"
)

// Writer writes documents to an output file. Nothing is visible under the
// output name until Commit succeeds (for regular files); Abort gives the
// output up. Abort after Commit does nothing, so it can be deferred.
// Writers are not safe for concurrent use.
type Writer interface {
	// Write appends one document.
	Write(*Document) error
	// Commit finishes the output and makes it visible.
	Commit() error
	// Abort removes what was written (for regular files).
	Abort() error
}

// Create starts writing documents to path, in the format its name calls
// for: Parquet for .parquet, otherwise JSONL (compressed for .gz, .zst or
// .zstd), so that "-" (standard output) and /dev/null write JSONL. Output
// goes through internal/atomicfile: regular files are replaced atomically,
// standard output and special files are written directly.
func Create(path string) (Writer, error) {
	base, comp := splitCompression(strings.ToLower(filepath.Base(path)))
	if path == "-" {
		comp = compNone
	}
	if filepath.Ext(base) == ".parquet" {
		if comp != compNone {
			return nil, fmt.Errorf("%s: Parquet output cannot be compressed as a whole (its pages are)", path)
		}
		return newParquetWriter(path)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	w := &jsonlWriter{f: f, w: f}
	switch comp {
	case compGzip:
		w.gz = gzip.NewWriter(f)
		w.w = w.gz
	case compZstd:
		// Frames of 4 MiB compressed on several goroutines (framedZstd):
		// the bytes do not depend on their number.
		zw := newFramedZstd(f)
		w.zw, w.w = zw, zw
	}
	return w, nil
}

// CheckOutputName refuses an output name that
// Create would write in another format than the name says: a compressed
// .parquet, and .csv, .tsv or .txt (with or without .gz or .zst), which
// would hold JSON Lines (a .txt input is one document a line; the
// documents' texts may span lines). "-" and names without those
// extensions pass: they are written as JSONL.
func CheckOutputName(path string) error {
	if path == "-" {
		return nil
	}
	base, comp := splitCompression(strings.ToLower(filepath.Base(path)))
	switch ext := filepath.Ext(base); ext {
	case ".parquet":
		if comp != compNone {
			return errors.New("Parquet output cannot be compressed as a whole (its pages are): name it .parquet")
		}
	case ".csv", ".tsv", ".txt":
		what := strings.ToUpper(ext[1:])
		if ext == ".txt" {
			what = "plain text"
		}
		return fmt.Errorf("the kept documents are written as JSON Lines (every input field kept) or Parquet, not %s: name the output .jsonl (.jsonl.gz, .jsonl.zst) or .parquet", what)
	}
	return nil
}

// jsonlWriter writes Document.Raw, one line per document.
type jsonlWriter struct {
	f   *atomicfile.File
	w   io.Writer
	gz  *gzip.Writer
	zw  *framedZstd
	buf []byte
}

// appendRecord appends the JSON object for d to dst: Raw as it is (made
// one line when it spans several), or {"id": ..., "text": ...} when Raw is
// empty.
func appendRecord(dst []byte, d *Document) ([]byte, error) {
	if len(d.Raw) == 0 {
		dst = append(dst, `{"id":`...)
		dst = AppendJSONString(dst, d.ID)
		dst = append(dst, `,"text":`...)
		dst = AppendJSONString(dst, d.Text)
		return append(dst, '}'), nil
	}
	if bytes.IndexByte(d.Raw, '\n') < 0 {
		return append(dst, d.Raw...), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, d.Raw); err != nil {
		return dst, fmt.Errorf("document %q: Raw is not JSON: %w", d.ID, err)
	}
	return append(dst, b.Bytes()...), nil
}

func (w *jsonlWriter) Write(d *Document) error {
	var err error
	if w.buf, err = AppendLine(w.buf[:0], d); err != nil {
		return err
	}
	_, err = w.w.Write(w.buf)
	return err
}

func (w *jsonlWriter) Commit() error {
	var err error
	switch {
	case w.gz != nil:
		err = w.gz.Close()
	case w.zw != nil:
		err = w.zw.Close()
	}
	if err != nil {
		w.f.Abort()
		return fmt.Errorf("%s: %w", w.f.Name(), err)
	}
	return w.f.Commit()
}

func (w *jsonlWriter) Abort() error {
	if w.zw != nil {
		w.zw.Close()
	}
	return w.f.Abort()
}

// A LineWriter is a Writer of JSONL that also takes lines made beforehand
// with AppendLine, so that they can be made on other goroutines.
type LineWriter interface {
	Writer
	// WriteLines appends lines, whole JSONL lines each ending in a
	// newline, as AppendLine makes them.
	WriteLines(lines []byte) error
}

// AppendLine appends to dst the line that a JSONL Writer writes for d,
// newline included.
func AppendLine(dst []byte, d *Document) ([]byte, error) {
	dst, err := appendRecord(dst, d)
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}

// WriteLines implements LineWriter.
func (w *jsonlWriter) WriteLines(lines []byte) error {
	_, err := w.w.Write(lines)
	return err
}
