package simhash

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/neardup/neardup/internal/atomicfile"
)

// ErrIDFFormat is returned (wrapped with the line number, and the file name
// by LoadIDF) for an IDF file that does not parse.
var ErrIDFFormat = errors.New("simhash: malformed IDF file")

// idfMagic starts the first line of an IDF file; the version follows.
const idfMagic = "neardup-idf"

// idfVersion is the version this package writes and the newest it reads.
const idfVersion = 1

// maxIDFLine bounds a line of an IDF file (the meta line is the long one).
const maxIDFLine = 64 << 10

// IDF is a table of document frequencies over a corpus of Docs documents.
// The weight of a feature is the smoothed inverse document frequency
//
//	idf(t) = ln((1 + Docs) / (1 + df(t))) + 1
//
// (scikit-learn's smooth_idf), so a feature never seen weighs the most and
// a feature in every document weighs 1. An IDF is read-only once built and
// safe for concurrent use.
type IDF struct {
	// Docs is the number of documents the table was learned from.
	Docs int64
	// Meta is a free single line describing how the features were made
	// (for example the shingle unit, n-gram size and seed), written to and
	// read from the file so that a caller can refuse a table built with
	// other parameters.
	Meta string

	df map[uint64]uint32
}

// Weight returns idf(feature). It does not allocate.
func (t *IDF) Weight(feature uint64) float64 {
	return math.Log(float64(1+t.Docs)/float64(1+t.df[feature])) + 1
}

// DF returns the number of documents that contain feature.
func (t *IDF) DF(feature uint64) int { return int(t.df[feature]) }

// Len returns the number of distinct features in the table.
func (t *IDF) Len() int { return len(t.df) }

// IDFBuilder learns an IDF table from documents. The zero value is ready
// to use. Memory grows with the number of distinct features (about 40
// bytes each): word 1-grams suit it better than long n-grams. Not safe for
// concurrent use; build one per goroutine and Merge them.
type IDFBuilder struct {
	docs    int64
	df      map[uint64]uint32
	scratch []uint64
}

// AddDoc counts the distinct features of one document (repeats within the
// document count once). features is not modified or kept.
func (b *IDFBuilder) AddDoc(features []uint64) {
	if b.df == nil {
		b.df = make(map[uint64]uint32)
	}
	b.docs++
	s := append(b.scratch[:0], features...)
	slices.Sort(s)
	s = slices.Compact(s)
	for _, x := range s {
		if b.df[x] < math.MaxUint32 {
			b.df[x]++
		}
	}
	b.scratch = s
}

// Merge adds the counts of o (learned over other documents) to b.
func (b *IDFBuilder) Merge(o *IDFBuilder) {
	if b.df == nil {
		b.df = make(map[uint64]uint32, len(o.df))
	}
	b.docs += o.docs
	for x, n := range o.df {
		b.df[x] = uint32(min(uint64(b.df[x])+uint64(n), math.MaxUint32))
	}
}

// IDF returns the table learned so far, with the given Meta line. The
// builder may go on learning; the table does not change.
func (b *IDFBuilder) IDF(meta string) *IDF {
	return &IDF{Docs: b.docs, Meta: meta, df: maps.Clone(b.df)}
}

// LearnIDF learns an IDF table from a sequence of documents given as their
// features (repeats allowed), stopping at the first error.
func LearnIDF(docs iter.Seq2[[]uint64, error], meta string) (*IDF, error) {
	var b IDFBuilder
	for f, err := range docs {
		if err != nil {
			return nil, err
		}
		b.AddDoc(f)
	}
	t := b.IDF(meta)
	t.df = b.df // b is ours: no need for the copy IDF made
	return t, nil
}

// WriteTo writes the table in the IDF file format described at ReadIDF,
// features in increasing order, so equal tables give equal files.
func (t *IDF) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	var n int64
	put := func(b []byte) {
		m, _ := bw.Write(b)
		n += int64(m)
	}
	line := fmt.Appendf(nil, "%s %d\ndocs %d\n", idfMagic, idfVersion, t.Docs)
	if t.Meta != "" {
		line = fmt.Appendf(line, "meta %s\n", strings.ReplaceAll(t.Meta, "\n", " "))
	}
	put(line)
	keys := slices.Sorted(maps.Keys(t.df))
	for _, x := range keys {
		line = line[:0]
		line = Fingerprint{Lo: x}.AppendHex(line, 64)
		line = append(line, ' ')
		line = strconv.AppendUint(line, uint64(t.df[x]), 10)
		line = append(line, '\n')
		put(line)
	}
	return n, bw.Flush()
}

// Save writes the table to path atomically (a temporary file in the same
// directory, fsync, rename); "-" and special files are written directly.
func (t *IDF) Save(path string) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("simhash: IDF file %s: %w", path, err)
	}
	defer f.Abort()
	if _, err := t.WriteTo(f); err != nil {
		return fmt.Errorf("simhash: IDF file %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("simhash: IDF file %s: %w", path, err)
	}
	return nil
}

// ReadIDF reads a table in the IDF file format, a text format of lines
// ending in '\n':
//
//	neardup-idf 1            magic and version (a newer version is refused)
//	docs N                   number of documents, N >= 0
//	meta TEXT                optional, free text to the end of the line
//	HHHHHHHHHHHHHHHH DF      one line per feature: 16 hex digits, df in 1..N
//
// Features are distinct; blank lines are not allowed; lines are at most 64
// KiB. Errors wrap ErrIDFFormat and name the line.
func ReadIDF(r io.Reader) (*IDF, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxIDFLine)
	sc.Split(scanLF)
	lineNo := 0
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: line %d: %s", ErrIDFFormat, lineNo, fmt.Sprintf(format, args...))
	}
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	line, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrIDFFormat, err)
		}
		return nil, fmt.Errorf("%w: empty file", ErrIDFFormat)
	}
	lineNo = 1
	magic, ver, ok := strings.Cut(strings.TrimSuffix(line, "\r"), " ")
	if !ok || magic != idfMagic {
		return nil, bad("want %q and a version", idfMagic)
	}
	v, err := strconv.Atoi(ver)
	if err != nil || v < 1 {
		return nil, bad("bad version %q", ver)
	}
	if v > idfVersion {
		return nil, bad("version %d is newer than this program reads (%d)", v, idfVersion)
	}
	line, ok = next()
	if !ok {
		return nil, fmt.Errorf("%w: line 2: missing docs line", ErrIDFFormat)
	}
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), "docs ")
	if !ok {
		return nil, bad("want \"docs N\"")
	}
	docs, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || docs < 0 {
		return nil, bad("bad document count %q", rest)
	}
	t := &IDF{Docs: docs, df: make(map[uint64]uint32)}
	first := true
	for {
		line, ok = next()
		if !ok {
			break
		}
		if first {
			first = false
			if m, ok := strings.CutPrefix(line, "meta "); ok {
				t.Meta = m // as written, a '\r' included
				continue
			}
		}
		hexs, dfs, ok := strings.Cut(strings.TrimSuffix(line, "\r"), " ")
		if !ok || len(hexs) != 16 {
			return nil, bad("want 16 hex digits, a space and a document frequency")
		}
		fp, _, err := ParseHex(hexs)
		if err != nil {
			return nil, bad("%v", err)
		}
		df, err := strconv.ParseUint(dfs, 10, 32)
		if err != nil || df < 1 || int64(df) > docs {
			return nil, bad("document frequency %q not in 1..%d", dfs, docs)
		}
		if _, dup := t.df[fp.Lo]; dup {
			return nil, bad("feature %s repeated", hexs)
		}
		t.df[fp.Lo] = uint32(df)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %w", ErrIDFFormat, lineNo+1, err)
	}
	return t, nil
}

// scanLF splits at '\n' only: unlike bufio.ScanLines it keeps a '\r' before
// it, so that meta text holding one reads back as WriteTo wrote it (the
// other lines accept a CRLF ending).
func scanLF(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// LoadIDF reads the IDF file at path; errors name the file.
func LoadIDF(path string) (*IDF, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("simhash: IDF file: %w", err)
	}
	defer f.Close()
	t, err := ReadIDF(f)
	if err != nil {
		return nil, fmt.Errorf("IDF file %s: %w", path, err)
	}
	return t, nil
}
