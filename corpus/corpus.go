// Package corpus reads documents from the file formats users have and writes
// the kept ones back.
//
// # Reading
//
// Open picks a reader from the file name (case-insensitive); ExpandWith
// turns directories into their supported files in sorted order, following
// symbolic links, and says what it left out; Multi reads several files one
// after another. Every reader yields Documents with an
// ID, a Text and Raw, the record as one JSON object:
//
//   - .jsonl, .json, .ndjson (JSONL): one JSON object per line. Text is
//     the string field Options.TextField ("text"), ID the field
//     Options.IDField ("id"; a number is kept as its JSON text) or FILE:LINE,
//     Raw the line byte for byte.
//   - .txt (plain text): one document per non-blank line. ID is FILE:LINE,
//     Text the line, Raw {"id": ID, "text": TEXT}.
//   - .warc, .arc, .wet (web archives; WARC 0.17 to 1.1, ARC v1 and v2):
//     one document per response, resource or conversion record (every ARC
//     record) with a text payload. The HTTP envelope is skipped, transfer and
//     content codings undone, the charset decoded to UTF-8, HTML turned into
//     text by text.HTMLToText (text.MainText with Options.HTMLMain). ID is the target URI, or the WARC header named
//     by Options.IDField when a record has it (e.g. "WARC-TREC-ID"); Raw is
//     {"id", "url", "date", "content_type", "text"}. See WARC.
//   - .parquet: one document per row; text and id columns by name; Raw has
//     every non-null column. See Parquet.
//   - "-": JSONL on standard input.
//   - Any other name (data.zst, corpus.data): the format
//     Options.StreamFormat gives, when it gives one; else an error
//     (ErrUnknownFormat).
//
// JSONL, text and web archives may be compressed with gzip (.gz, also
// multi-member, as WARC files with one member per record are) or zstd
// (.zst, .zstd); compressed data is also recognised by its magic number
// whatever the name. Record is the 1-based line, record or row number and
// Offset the byte offset of the record in the decompressed stream (the row
// index for Parquet). docs/formats.md has the details. A JSONL or text
// reader says where another may start reading instead of at the file's
// start (Position, Options.Start): at any line of a plain file, at a gzip
// member or zstd frame of a compressed one.
//
// A Reader is Scanner-shaped: Next advances, Doc returns the current
// document, Err reports the error that stopped iteration. The Document and
// the slices it holds are valid only until the next call to Next; copy what
// must outlive it.
//
// # Bad input
//
// Bad records produce a *RecordError that names the file, the line or
// record number, the byte offset and, when it could be read, the document
// id; it wraps one of the Err* sentinels. With Options.OnInvalid a caller
// may skip such records and go on: the readers resume at the next line or
// record (a WARC reader scans ahead to the next header line). Damage that
// leaves no next record to find (a corrupt or truncated gzip or zstd
// stream, a broken Parquet file, a WARC record cut short) wraps ErrCorrupt;
// it ends the file, cleanly when OnInvalid skips it. Documents read before
// an error are never taken back. No input makes a reader panic; inputs are
// bounded by Options.MaxDocBytes and by internal limits on header lines.
//
// # Writing
//
// Create writes documents to a file named like the inputs: Parquet for
// .parquet, otherwise JSONL (gzip for .gz, zstd for .zst), "-" for standard
// output. JSONL output is each document's Raw, so every input field is
// kept; Parquet output has one optional column per top-level field, its
// type inferred from all records (see the comment of parquetWriter in
// parquet_writer.go and docs/formats.md). Output is atomic through
// internal/atomicfile: nothing appears under the name until Commit, and
// special files such as /dev/null are written in place.
//
// Readers and writers are not safe for concurrent use; separate ones may
// be used from separate goroutines.
package corpus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
)

// Document is one input document.
type Document struct {
	// ID is the id field, or FILE:LINE (FILE:RECORD for record formats)
	// when the input has none.
	ID string
	// Text is the text field, as read (not normalised).
	Text string
	// Raw is the whole record as a JSON object, without a trailing newline.
	Raw []byte
	// Source is the file the document came from ("-" for stdin).
	Source string
	// Record is the 1-based line (JSONL, text) or record (WARC, Parquet)
	// number within Source.
	Record int64
	// Offset is the byte offset of the record in the decompressed stream
	// (for Parquet, the 0-based row index).
	Offset int64
}

// Reader iterates over documents.
type Reader interface {
	// Next advances to the next document and reports whether there is one.
	Next() bool
	// Doc returns the current document, valid until the next call to Next.
	Doc() *Document
	// Err returns the error that stopped iteration, nil at a clean end.
	Err() error
	// Close releases the underlying files.
	Close() error
}

// Default limits.
const (
	DefaultTextField   = "text"
	DefaultIDField     = "id"
	DefaultMaxDocBytes = 16 << 20
)

// Options configures readers. The zero value means the defaults.
type Options struct {
	// TextField is the field holding the text; "" means "text".
	TextField string
	// IDField is the field holding the id; "" means "id". A record without
	// it gets the id FILE:LINE.
	IDField string
	// MaxDocBytes limits the size of one record; 0 means 16 MiB.
	MaxDocBytes int
	// OnInvalid, when set, is called with each bad record. Returning nil
	// skips the record and goes on; returning an error stops the reader
	// with that error. When nil, the first bad record stops the reader.
	OnInvalid func(*RecordError) error
	// RawOnly, for JSONL input, splits the records without validating or
	// parsing them: Document.ID and Text are empty and ParseJSONL fills
	// them in. Blank lines are still skipped and the size limit still
	// applies. It is for a second read of a file already read in full, or
	// for parsing the records on other goroutines (ParseJSONLShared), as
	// package dedup does. Other formats ignore it.
	RawOnly bool
	// StreamFormat is the format NewStream reads (standard input, whose
	// name says nothing): "" or "jsonl" for JSON Lines, "txt" for plain
	// text, one document per line. Files go by their names; Open reads a
	// file whose name gives no format (data.zst, corpus.data) in
	// StreamFormat when it is not "".
	StreamFormat string
	// HTMLMain makes web archive readers turn HTML payloads into text
	// with text.MainText, the page's main content without its navigation,
	// menus, sidebars and footers, instead of text.HTMLToText, the whole
	// visible text. Normalising with text.Options.HTML on and HTMLAll off
	// (neardup's --html) wants it, so that pages read from WARC and ARC
	// files are compared on what JSONL pages marked as HTML are. Other
	// formats ignore it.
	HTMLMain bool
	// Start, when not the zero Position, is where Open starts reading a
	// JSONL or text file, local or on object storage (see Position);
	// other inputs are an error.
	Start Position
	// Version, when not the zero Version, is the content Open expects of
	// the file (a staged job's plan recorded it): a file of another size
	// or tag is refused with an error that says what changed.
	Version Version
}

func (o Options) withDefaults() Options {
	if o.TextField == "" {
		o.TextField = DefaultTextField
	}
	if o.IDField == "" {
		o.IDField = DefaultIDField
	}
	if o.MaxDocBytes <= 0 {
		o.MaxDocBytes = DefaultMaxDocBytes
	}
	return o
}

// Sentinel errors wrapped by RecordError; test with errors.Is.
var (
	ErrSyntax        = errors.New("invalid JSON")
	ErrNotObject     = errors.New("record is not a JSON object")
	ErrMissingText   = errors.New("missing text field")
	ErrTextType      = errors.New("text field is not a string")
	ErrInvalidUTF8   = errors.New("invalid UTF-8")
	ErrTooLarge      = errors.New("record exceeds the size limit")
	ErrUnknownFormat = errors.New("unknown input format")
	// ErrCorrupt marks input that cannot be decoded: a bad or truncated
	// gzip or zstd stream, a broken Parquet file.
	ErrCorrupt = errors.New("corrupt or truncated input")
)

// SizeError is a record over Options.MaxDocBytes. It wraps ErrTooLarge.
type SizeError struct {
	// Length is the record's length in bytes, 0 when the reader did
	// not learn it (it stopped reading at the limit).
	Length int64
	// Limit is Options.MaxDocBytes.
	Limit int
}

func (e *SizeError) Error() string {
	if e.Length <= 0 {
		return fmt.Sprintf("%v (more than the limit of %s bytes)", ErrTooLarge, human.Number(e.Limit))
	}
	return fmt.Sprintf("%v (%s bytes, limit %s)", ErrTooLarge, human.Number(e.Length), human.Number(e.Limit))
}

// Unwrap returns ErrTooLarge.
func (e *SizeError) Unwrap() error { return ErrTooLarge }

// RecordError describes a bad record.
type RecordError struct {
	File   string
	Record int64 // 1-based line or record number
	Offset int64 // byte offset of the record in the decoded stream
	ID     string
	Err    error
}

func (e *RecordError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d (offset %d)", e.File, e.Record, e.Offset)
	if e.ID != "" {
		fmt.Fprintf(&b, " id %q", e.ID)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *RecordError) Unwrap() error { return e.Err }

// invalid routes a bad record through opts.OnInvalid: it returns nil to skip
// the record, or the error to stop with.
func invalid(opts *Options, e *RecordError) error {
	if opts.OnInvalid == nil {
		return e
	}
	return opts.OnInvalid(e)
}

// reject routes a bad record read from src through opts.OnInvalid, as
// invalid does, and reports whether the file ends there. When src is a
// compressed stream it is checked ahead first (decoder.verify): garbage
// from a damaged stream often decodes as text before its checksum fails,
// so damage found there is reported instead, naming the record error too,
// and ends the file (except a lost gzip member of a web archive, after
// which reading goes on).
// gap is true for such a lost member: a web archive reader then scans for
// the next record.
func reject(opts *Options, src any, e *RecordError) (end, gap bool, stop error) {
	if d, ok := src.(*decoder); ok && !errors.Is(e.Err, ErrCorrupt) {
		if err := d.verify(); err != nil {
			if !errors.Is(err, ErrCorrupt) { // the file itself failed
				return true, false, &RecordError{File: e.File, Record: e.Record, Offset: e.Offset, Err: err}
			}
			e = DamagedAfter(e, err)
			gap = errors.Is(err, errGzipGap)
			end = !gap
		}
	}
	return end, gap, invalid(opts, e)
}

// VerifyAhead is how far (in decompressed bytes) a reader looks ahead of a
// bad record in a compressed stream for damage to report instead (see
// DamagedAfter).
const VerifyAhead = maxVerifyAhead

// DamagedAfter is the error a reader reports for the bad record e of a
// compressed stream when the stream turns out damaged (damage, wrapping
// ErrCorrupt) within VerifyAhead bytes after it: garbage from a damaged
// stream often decodes as text before its checksum fails, so the damage
// is what is reported, at e's line, and the file ends there. Package
// dedup, which validates records away from the reader, uses it to report
// exactly what the reader would.
func DamagedAfter(e *RecordError, damage error) *RecordError {
	return &RecordError{File: e.File, Record: e.Record, Offset: e.Offset,
		Err: fmt.Errorf("%w (found by checking the stream ahead after a bad record at this line, %v; nothing from this line on is used)", damage, e.Err)}
}

// Supported reports whether the file name has an extension a reader exists
// for.
func Supported(name string) bool { return CheckFormat(name) == nil }

// CheckFormat returns Open's error for a file name that has no extension
// a reader exists for (wrapping ErrUnknownFormat), nil for one that has.
func CheckFormat(name string) error {
	_, _, err := formatOf(name, "")
	return err
}

// IsWebArchive reports whether the file name is read as a WARC or ARC
// web archive (.warc, .arc, .wet, compressed or not).
func IsWebArchive(name string) bool {
	f, _, err := formatOf(name, "")
	return err == nil && f == formatWARC
}

// ReadsLines reports whether Open with opts reads the file name (or
// NewStream reads "-") as plain text, one document a line: its documents'
// ids are always their FILE:LINE, and Options.IDField only names the id's
// key in their records.
func ReadsLines(name string, opts Options) bool {
	if name == "-" {
		return opts.StreamFormat == StreamText
	}
	f, _, err := formatOf(name, opts.StreamFormat)
	return err == nil && f == formatLines
}

// CheckFormatWith is CheckFormat for Open with opts: a name that gives no
// format is read in opts.StreamFormat when it is not "".
func CheckFormatWith(name string, opts Options) error {
	_, _, err := formatOf(name, opts.StreamFormat)
	return err
}

type format uint8

const (
	formatJSONL format = iota
	formatLines
	formatWARC
	formatParquet
)

func (f format) String() string {
	switch f {
	case formatJSONL:
		return "JSONL"
	case formatLines:
		return "text"
	case formatWARC:
		return "WARC/ARC"
	case formatParquet:
		return "Parquet"
	}
	return "unknown"
}

// formatOf returns the format and compression a file name calls for; a
// name that gives no format is read in stream (Options.StreamFormat)
// when it is not "".
func formatOf(name, stream string) (format, compression, error) {
	if name == "-" {
		return formatJSONL, compSniff, nil
	}
	base, comp := splitCompression(strings.ToLower(filepath.Base(name)))
	switch filepath.Ext(base) {
	case ".jsonl", ".json", ".ndjson":
		return formatJSONL, comp, nil
	case ".txt":
		return formatLines, comp, nil
	case ".warc", ".arc", ".wet":
		return formatWARC, comp, nil
	case ".parquet":
		if comp != compNone {
			return 0, 0, fmt.Errorf("%s: %w (a Parquet file cannot be compressed as a whole; its pages are)", name, ErrUnknownFormat)
		}
		return formatParquet, comp, nil
	}
	switch stream {
	case StreamJSONL:
		return formatJSONL, comp, nil
	case StreamText:
		return formatLines, comp, nil
	}
	return 0, 0, fmt.Errorf("%s: %w (want .jsonl, .json, .ndjson, .txt, .warc, .arc or .wet, optionally .gz or .zst, or .parquet)", name, ErrUnknownFormat)
}

// Open opens one file (or "-" for JSONL on standard input, plain or
// compressed with gzip or zstd, recognised by its first bytes) with the
// reader its name calls for; see the package comment for the names.
func Open(name string, opts Options) (Reader, error) {
	f, comp, err := formatOf(name, opts.StreamFormat)
	if err != nil {
		return nil, err
	}
	if opts.Start != (Position{}) {
		if name == "-" {
			return nil, fmt.Errorf("%s: cannot start reading standard input at a position", name)
		}
		dec, err := openAt(name, f, opts.Start, opts.Version)
		if err != nil {
			return nil, err
		}
		if f == formatLines {
			t := NewLines(dec, name, opts)
			t.lines.startAt(opts.Start)
			return t, nil
		}
		j := NewJSONL(dec, name, opts)
		j.lines.startAt(opts.Start)
		return j, nil
	}
	if f == formatParquet {
		return openParquet(name, opts)
	}
	if name == "-" {
		if opts.Version != (Version{}) {
			return nil, fmt.Errorf("%s: cannot check the version of standard input", name)
		}
		return NewStream(os.Stdin, name, opts), nil
	}
	if objstore.IsURL(name) {
		return openURL(name, f, comp, opts)
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	var rc io.ReadCloser = file
	if comp == compNone {
		comp = compSniff // compressed files are recognised whatever their name
	}
	dec := newDecoder(rc, comp)
	if st, err := file.Stat(); err == nil && st.Mode().IsRegular() {
		dec.size = st.Size()
	}
	dec.version = versionOf(file)
	if err := sameVersion(name, dec.version, opts.Version); err != nil {
		file.Close()
		return nil, err
	}
	// Web archives compress each record as its own gzip member: after a
	// damaged one, the next records can still be read.
	dec.resync = f == formatWARC
	rc = dec
	switch f {
	case formatJSONL:
		return NewJSONL(rc, name, opts), nil
	case formatLines:
		return NewLines(rc, name, opts), nil
	case formatWARC:
		return NewWARC(rc, name, opts), nil
	}
	rc.Close()
	return nil, fmt.Errorf("%s: %w", name, ErrUnknownFormat)
}

// openURL opens an object in object storage (s3://, gs://): one
// sequential stream, decoded as a local file of that name would be.
func openURL(name string, f format, comp compression, opts Options) (Reader, error) {
	body, err := objstore.OpenURL(context.Background(), name)
	if err != nil {
		return nil, err
	}
	if comp == compNone {
		comp = compSniff
	}
	dec := newDecoder(body, comp)
	// The size, as the download's answer gave it, words a damaged gzip
	// or zstd stream as a local file's ("of 15160 (7580 bytes unread)").
	dec.size = objstore.Size(body)
	dec.version = versionOf(body)
	if err := sameVersion(name, dec.version, opts.Version); err != nil {
		body.Close()
		return nil, err
	}
	dec.resync = f == formatWARC
	switch f {
	case formatJSONL:
		return NewJSONL(dec, name, opts), nil
	case formatLines:
		return NewLines(dec, name, opts), nil
	case formatWARC:
		return NewWARC(dec, name, opts), nil
	}
	dec.Close()
	return nil, fmt.Errorf("%s: %w", name, ErrUnknownFormat)
}

// NewStream returns a reader over a stream such as standard input, plain
// or compressed with gzip or zstd (recognised by the first bytes): JSONL,
// or plain text with one document per line when opts.StreamFormat is
// "txt"; name is used in ids and errors. Close does not close r.
func NewStream(r io.Reader, name string, opts Options) Reader {
	return NewStreamSize(r, name, -1, opts)
}

// NewStreamSize is NewStream over a file of size bytes (-1: unknown), as
// a remote file system reports it: a damaged gzip or zstd stream is then
// worded as Open words a file's, with the file's size and, for gzip, the
// bytes never read ("reading stopped at compressed offset 7580 of 15160
// (7580 bytes unread)").
func NewStreamSize(r io.Reader, name string, size int64, opts Options) Reader {
	dec := newDecoder(io.NopCloser(r), compSniff)
	dec.size = max(size, -1)
	if opts.StreamFormat == StreamText {
		return NewLines(dec, name, opts)
	}
	return NewJSONL(dec, name, opts)
}

// The values of Options.StreamFormat.
const (
	StreamJSONL = "jsonl"
	StreamText  = "txt"
)

// Multi reads several files one after another, opening each when the
// previous one ends.
type Multi struct {
	files []string
	opts  Options
	cur   Reader
	i     int
	err   error
}

// NewMulti returns a reader over files, in order.
func NewMulti(files []string, opts Options) *Multi {
	return &Multi{files: files, opts: opts}
}

// Next implements Reader.
func (m *Multi) Next() bool {
	for m.err == nil {
		if m.cur == nil {
			if m.i >= len(m.files) {
				return false
			}
			r, err := Open(m.files[m.i], m.opts)
			m.i++
			if err != nil {
				m.err = err
				return false
			}
			m.cur = r
		}
		if m.cur.Next() {
			return true
		}
		m.err = m.cur.Err()
		if err := m.cur.Close(); m.err == nil {
			m.err = err
		}
		m.cur = nil
	}
	return false
}

// Doc implements Reader.
func (m *Multi) Doc() *Document { return m.cur.Doc() }

// Err implements Reader.
func (m *Multi) Err() error { return m.err }

// Close implements Reader.
func (m *Multi) Close() error {
	if m.cur != nil {
		err := m.cur.Close()
		m.cur = nil
		return err
	}
	return nil
}
