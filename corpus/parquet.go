package corpus

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	pqformat "github.com/parquet-go/parquet-go/format"

	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
)

// Parquet reads the rows of a Parquet file, one document per row. The
// text column (Options.TextField) must hold strings; the id column
// (Options.IDField) may hold any scalar, written as its JSON text; a row
// without an id gets FILE:ROW. Raw is a JSON object with every column of
// the row, in schema order; null values are left out.
//
// Columns map to JSON as follows. Strings, enums and byte arrays become
// JSON strings (invalid UTF-8 replaced by U+FFFD); JSON columns are
// embedded as they are; integers, floats and doubles become numbers (NaN
// and infinities strings); booleans true or false; dates "2006-01-02";
// timestamps RFC 3339 in UTC. A file whose top-level fields include
// groups, lists, maps or other logical types is read through parquet-go's
// reconstruction into Go values: nested values become JSON objects and
// arrays, in which numbers are float64.
//
// Record is the 1-based row number and Offset the 0-based row index.
// A file that is not Parquet, or whose pages cannot be decoded, gives an
// error wrapping ErrCorrupt (after which the reader stops; with
// Options.OnInvalid skipping it, cleanly). parquet-go panics on some
// malformed files; the reader turns those panics into such errors.
type Parquet struct {
	in      io.ReaderAt
	size    int64
	version Version // the file's as Open opened it (InputVersion)
	closer  io.Closer
	name    string
	opts    Options
	doc     Document
	err     error
	done    bool
	opened  bool

	file    *parquet.File
	decoded *os.File // the copy with LZ4_RAW chunks decoded, if any
	reader  *parquet.GenericReader[map[string]any]
	flat    bool
	cols    []pqColumn // by leaf column index (flat files)
	text    int        // column index of the text, -1 if none
	id      int        // column index of the id, -1 if none
	rows    []parquet.Row
	n, i    int
	row     int64 // rows read so far
	m       []map[string]any
	raw     []byte
}

// pqColumn describes one top-level leaf column of a flat file.
type pqColumn struct {
	name   string
	key    []byte // the JSON-quoted name
	conv   pqConv
	maxDef int
	unit   time.Duration // timestamps: one tick
}

type pqConv uint8

const (
	convString pqConv = iota
	convJSON
	convBool
	convInt
	convUint
	convFloat
	convDate
	convTimestamp
)

// NewParquet returns a reader over the Parquet file in r, of size bytes;
// name is used in ids and errors. A bad file is reported by Next and Err.
// Close closes r if it is an io.Closer.
func NewParquet(r io.ReaderAt, size int64, name string, opts Options) *Parquet {
	p := &Parquet{in: r, size: size, name: name, opts: opts.withDefaults(), text: -1, id: -1}
	if c, ok := r.(io.Closer); ok {
		p.closer = c
	}
	return p
}

// Doc implements Reader.
func (p *Parquet) Doc() *Document { return &p.doc }

// Err implements Reader.
func (p *Parquet) Err() error { return p.err }

// Close implements Reader.
func (p *Parquet) Close() error {
	if p.reader != nil {
		p.reader.Close()
	}
	if p.decoded != nil {
		p.decoded.Close()
	}
	if p.closer != nil {
		return p.closer.Close()
	}
	return nil
}

// fail reports a bad row (or a bad file, record 0) and reports whether
// reading may go on. Errors that wrap ErrCorrupt always end the file.
func (p *Parquet) fail(record int64, id string, err error) bool {
	if e := invalid(&p.opts, &RecordError{File: p.name, Record: record, Offset: max(record-1, 0), ID: id, Err: err}); e != nil {
		p.err = e
		return false
	}
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrMissingText) || errors.Is(err, ErrTextType) && record == 0 {
		p.done = true
		return false
	}
	return true
}

// Next implements Reader.
func (p *Parquet) Next() (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			p.fail(p.row+1, "", fmt.Errorf("%w: parquet: %v", ErrCorrupt, r))
			p.done = true
			ok = false
		}
	}()
	if !p.opened {
		p.opened = true
		if err := p.open(); err != nil {
			p.fail(0, "", err)
			p.done = true
			return false
		}
	}
	for p.err == nil && !p.done {
		if p.i == p.n {
			if !p.fill() {
				return false
			}
			continue
		}
		p.row++
		var err error
		var id string
		if p.flat {
			id, err = p.convertFlat(p.rows[p.i])
			p.i++
		} else {
			id, err = p.convertNested()
			p.i++
		}
		if err != nil {
			if !p.fail(p.row, id, err) {
				return false
			}
			continue
		}
		return true
	}
	return false
}

// fill reads the next batch of rows.
func (p *Parquet) fill() bool {
	if p.flat {
		n, err := p.reader.ReadRows(p.rows)
		p.n, p.i = n, 0
		if n > 0 {
			return true
		}
		if err != nil && err != io.EOF {
			p.fail(p.row+1, "", fmt.Errorf("%w: parquet: %v", ErrCorrupt, err))
		}
		p.done = true
		return false
	}
	// Nested files: one row at a time through reconstruction.
	clear(p.m[0])
	if n, err := p.reader.Read(p.m); n == 0 {
		if err != nil && err != io.EOF {
			p.fail(p.row+1, "", fmt.Errorf("%w: parquet: %v", ErrCorrupt, err))
		}
		p.done = true
		return false
	}
	p.n, p.i = 1, 0
	return true
}

// checkFooter validates the magic numbers and the footer length before
// parquet-go sees the file: it allocates the footer length it reads, up
// to 4 GiB, without checking it against the file size.
func checkFooter(r io.ReaderAt, size int64) error {
	if size < 12 {
		return fmt.Errorf("%w: parquet: file of %d bytes is too short", ErrCorrupt, size)
	}
	var head, tail [4]byte
	var foot [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return err
	}
	if _, err := r.ReadAt(foot[:], size-8); err != nil {
		return err
	}
	copy(tail[:], foot[4:])
	if string(head[:]) != "PAR1" || string(tail[:]) != "PAR1" {
		return fmt.Errorf("%w: parquet: no PAR1 magic numbers (header %q, footer %q)", ErrCorrupt, head[:], tail[:])
	}
	if n := int64(binary.LittleEndian.Uint32(foot[:4])); n+12 > size {
		return fmt.Errorf("%w: parquet: footer of %s bytes in a file of %s bytes", ErrCorrupt, human.Number(n), human.Number(size))
	}
	return nil
}

// maxChunkBytes bounds the uncompressed size of one column chunk.
const maxChunkBytes = 1 << 30

// ErrUnsupportedCodec marks a Parquet file compressed with a codec the
// reader does not decode: the file is not damaged, it needs rewriting
// with another codec (zstd, Snappy, gzip, Brotli or none).
var ErrUnsupportedCodec = errors.New("unsupported compression codec")

// checkChunks refuses column chunks that parquet-go would decode with
// unbounded memory or wrongly, and sizes that do not fit the file or the
// limit. The codecs parquet-go decodes here are none, Snappy, gzip,
// Brotli and zstd; LZ4_RAW chunks were decoded before (decodeLZ4Raw:
// parquet-go v0.32.0 misreads them); others (LZO, the deprecated Hadoop
// LZ4) are ErrUnsupportedCodec.
func checkChunks(f *parquet.File) error {
	md := f.Metadata()
	for i, rg := range md.RowGroups {
		for j, c := range rg.Columns {
			m := &c.MetaData
			switch m.Codec {
			case pqformat.Uncompressed, pqformat.Snappy, pqformat.Gzip, pqformat.Brotli, pqformat.Zstd:
			default:
				return fmt.Errorf("%w %v (row group %d, column %d): rewrite the file with ZSTD, SNAPPY, GZIP, BROTLI, LZ4_RAW or no compression",
					ErrUnsupportedCodec, m.Codec, i, j)
			}
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			if m.TotalCompressedSize < 0 || start < 0 || start > f.Size()-m.TotalCompressedSize ||
				m.TotalUncompressedSize < 0 || m.TotalUncompressedSize > maxChunkBytes {
				return fmt.Errorf("%w: parquet: row group %d column %d: invalid sizes (compressed %d, uncompressed %d, offset %d)",
					ErrCorrupt, i, j, m.TotalCompressedSize, m.TotalUncompressedSize, start)
			}
			if err := checkPages(f, start, m.TotalCompressedSize, m.Codec); err != nil {
				return fmt.Errorf("%w: parquet: row group %d column %d: %v", ErrCorrupt, i, j, err)
			}
		}
	}
	return nil
}

// Limits of one page: its uncompressed size, and the size of its header
// (with its statistics).
const (
	maxPageBytes  = 256 << 20
	maxPageHeader = 1 << 20
)

// checkPages reads the page headers of a column chunk (without its page
// data) and checks their sizes, since parquet-go allocates the sizes a
// page header and a Snappy block header declare.
func checkPages(f *parquet.File, start, size int64, codec pqformat.CompressionCodec) error {
	var proto thrift.CompactProtocol
	buf := make([]byte, min(size, maxPageHeader))
	for off := start; off < start+size; {
		// Decode from a bounded buffer: the streaming decoder allocates
		// the lengths it reads before reading the bytes.
		b := buf[:min(int64(len(buf)), start+size-off)]
		if n, err := f.ReadAt(b, off); n < len(b) {
			return fmt.Errorf("page header at offset %d: %v", off, err)
		}
		r := proto.NewReaderFromBytes(b)
		var h pqformat.PageHeader
		if err := thrift.NewDecoder(r).Decode(&h); err != nil {
			return fmt.Errorf("page header at offset %d: %v", off, err)
		}
		data := off + int64(r.BytesRead())
		if h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > start+size-data || h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes {
			return fmt.Errorf("page at offset %d: invalid sizes (compressed %d, uncompressed %d)", off, h.CompressedPageSize, h.UncompressedPageSize)
		}
		if codec == pqformat.Snappy && h.CompressedPageSize > 0 {
			skip := int64(0)
			if h.DataPageHeaderV2.Valid {
				skip = int64(h.DataPageHeaderV2.V.DefinitionLevelsByteLength) + int64(h.DataPageHeaderV2.V.RepetitionLevelsByteLength)
			}
			if skip < 0 || skip > int64(h.CompressedPageSize) {
				return fmt.Errorf("page at offset %d: invalid level lengths", off)
			}
			if skip < int64(h.CompressedPageSize) {
				var hdr [binary.MaxVarintLen32]byte
				n, _ := f.ReadAt(hdr[:min(int64(len(hdr)), int64(h.CompressedPageSize)-skip)], data+skip)
				if decoded, k := binary.Uvarint(hdr[:n]); k <= 0 || decoded > uint64(h.UncompressedPageSize) {
					return fmt.Errorf("page at offset %d: Snappy block of %d bytes in a page of %d", off, decoded, h.UncompressedPageSize)
				}
			}
		}
		off = data + int64(h.CompressedPageSize)
	}
	return nil
}

func (p *Parquet) open() error {
	if err := checkFooter(p.in, p.size); err != nil {
		return err
	}
	f, err := parquet.OpenFile(p.in, p.size, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true))
	if err != nil {
		return fmt.Errorf("%w: parquet: %v", ErrCorrupt, err)
	}
	if hasLZ4Raw(f) { // read a copy with those chunks decoded
		if p.decoded, p.size, err = openDecodedLZ4Raw(p.in, p.size, f); err != nil {
			return err
		}
		p.in = p.decoded
		if f, err = parquet.OpenFile(p.in, p.size, parquet.SkipBloomFilters(true), parquet.SkipPageIndex(true)); err != nil {
			return fmt.Errorf("%w: parquet: decoded LZ4_RAW copy: %v", ErrCorrupt, err)
		}
	}
	if err := checkChunks(f); err != nil {
		return err
	}
	p.file = f
	schema := f.Schema()
	p.flat = true
	for _, field := range schema.Fields() {
		if !field.Leaf() || field.Repeated() {
			p.flat = false
			break
		}
	}
	textFound := false
	if p.flat {
		for _, path := range schema.Columns() {
			leaf, _ := schema.Lookup(path...)
			conv, unit, ok := pqConvOf(leaf.Node.Type())
			if !ok {
				p.flat = false
				break
			}
			name := path[0]
			p.cols = append(p.cols, pqColumn{name: name, key: AppendJSONString(nil, name), conv: conv, unit: unit, maxDef: leaf.MaxDefinitionLevel})
			if name == p.opts.TextField {
				textFound = true
				if conv != convString && conv != convJSON {
					return fmt.Errorf("%w (column %q is %v)", ErrTextType, name, leaf.Node.Type())
				}
				p.text = leaf.ColumnIndex
			}
			if name == p.opts.IDField {
				p.id = leaf.ColumnIndex
			}
		}
	}
	if !p.flat {
		p.cols = nil
		p.text, p.id = -1, -1
		for _, field := range schema.Fields() {
			if field.Name() == p.opts.TextField {
				textFound = true
			}
		}
		p.m = []map[string]any{make(map[string]any)}
	}
	if !textFound {
		// The top-level names, quoted as a JSONL record's fields are
		// (recordFields): --text-field names one of them.
		names := make([]string, 0, len(schema.Fields()))
		for _, field := range schema.Fields() {
			names = append(names, strconv.Quote(field.Name()))
		}
		return fmt.Errorf("%w %q (the file's columns: %s)", ErrMissingText, p.opts.TextField, strings.Join(names, ", "))
	}
	p.reader = parquet.NewGenericReader[map[string]any](f, f.Schema())
	if p.flat {
		p.rows = make([]parquet.Row, 256)
	}
	return nil
}

// pqConvOf returns how a leaf type becomes JSON; ok is false for types
// that need parquet-go's reconstruction.
func pqConvOf(t parquet.Type) (conv pqConv, unit time.Duration, ok bool) {
	lt := t.LogicalType()
	var lv pqformat.LogicalTypeValue
	if lt != nil {
		lv = lt.Value
	}
	if lt == nil && t.ConvertedType() != nil {
		return 0, 0, false
	}
	switch t.Kind() {
	case parquet.Boolean:
		return convBool, 0, lv == nil
	case parquet.Int32, parquet.Int64:
		switch v := lv.(type) {
		case nil:
			return convInt, 0, true
		case *pqformat.IntType:
			if v.IsSigned {
				return convInt, 0, true
			}
			return convUint, 0, true
		case *pqformat.DateType:
			return convDate, 0, t.Kind() == parquet.Int32
		case *pqformat.TimestampType:
			if v.Unit.Value != nil && v.Unit.Value.Duration() > 0 {
				return convTimestamp, v.Unit.Value.Duration(), t.Kind() == parquet.Int64
			}
		}
	case parquet.Float, parquet.Double:
		return convFloat, 0, lv == nil
	case parquet.ByteArray, parquet.FixedLenByteArray:
		switch lv.(type) {
		case nil, *pqformat.StringType, *pqformat.EnumType:
			return convString, 0, true
		case *pqformat.JsonType:
			return convJSON, 0, true
		}
	}
	return 0, 0, false
}

// convertFlat makes the document of one row of a flat file.
func (p *Parquet) convertFlat(row parquet.Row) (id string, err error) {
	p.raw = append(p.raw[:0], '{')
	var text string
	haveText := false
	for _, v := range row {
		c := v.Column()
		if c < 0 || c >= len(p.cols) || v.DefinitionLevel() < p.cols[c].maxDef {
			continue // null
		}
		col := &p.cols[c]
		if len(p.raw) > 1 {
			p.raw = append(p.raw, ',')
		}
		p.raw = append(p.raw, col.key...)
		p.raw = append(p.raw, ':')
		start := len(p.raw)
		p.raw = col.appendValue(p.raw, v)
		switch c {
		case p.id:
			if col.conv == convString {
				id = string(v.ByteArray())
			} else {
				id = string(p.raw[start:])
			}
		case p.text:
			b := v.ByteArray()
			if col.conv == convJSON { // a JSON column holding a string
				if err := json.Unmarshal(b, &text); err != nil {
					return id, fmt.Errorf("%w (column %q)", ErrTextType, col.name)
				}
			} else {
				if !utf8.Valid(b) {
					return id, ErrInvalidUTF8
				}
				text = string(b)
			}
			haveText = true
		}
	}
	p.raw = append(p.raw, '}')
	if !utf8.ValidString(id) {
		id = string(bytes.ToValidUTF8([]byte(id), []byte("\uFFFD")))
	}
	if id == "" {
		id = p.name + ":" + strconv.FormatInt(p.row, 10)
	}
	if !haveText {
		return id, fmt.Errorf("%w %q (null)", ErrMissingText, p.opts.TextField)
	}
	p.doc = Document{ID: id, Text: text, Raw: p.raw, Source: p.name, Record: p.row, Offset: p.row - 1}
	return id, nil
}

// appendValue appends the JSON of a non-null value.
func (c *pqColumn) appendValue(dst []byte, v parquet.Value) []byte {
	switch c.conv {
	case convBool:
		return strconv.AppendBool(dst, v.Boolean())
	case convInt:
		if v.Kind() == parquet.Int32 {
			return strconv.AppendInt(dst, int64(v.Int32()), 10)
		}
		return strconv.AppendInt(dst, v.Int64(), 10)
	case convUint:
		if v.Kind() == parquet.Int32 {
			return strconv.AppendUint(dst, uint64(v.Uint32()), 10)
		}
		return strconv.AppendUint(dst, v.Uint64(), 10)
	case convFloat:
		f, bits := v.Double(), 64
		if v.Kind() == parquet.Float {
			f, bits = float64(v.Float()), 32
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return AppendJSONString(dst, strconv.FormatFloat(f, 'g', -1, bits))
		}
		return strconv.AppendFloat(dst, f, 'g', -1, bits)
	case convDate:
		return AppendJSONString(dst, time.Unix(int64(v.Int32())*86400, 0).UTC().Format(time.DateOnly))
	case convTimestamp:
		t := time.Unix(0, 0).Add(time.Duration(v.Int64()) * c.unit)
		return AppendJSONString(dst, t.UTC().Format(time.RFC3339Nano))
	case convJSON:
		if b := v.ByteArray(); json.Valid(b) {
			var buf bytes.Buffer
			if json.Compact(&buf, b) == nil {
				return append(dst, buf.Bytes()...)
			}
		}
	}
	return AppendJSONString(dst, string(v.ByteArray()))
}

// convertNested makes the document of the row in p.m.
func (p *Parquet) convertNested() (id string, err error) {
	m := p.m[0]
	if v, ok := m[p.opts.IDField]; ok && v != nil {
		switch v := v.(type) {
		case string:
			id = v
		case []byte:
			id = string(v)
		default:
			b, _ := json.Marshal(v)
			id = string(b)
		}
	}
	if id == "" {
		id = p.name + ":" + strconv.FormatInt(p.row, 10)
	}
	var text string
	switch v := m[p.opts.TextField].(type) {
	case string:
		text = v
	case []byte:
		text = string(v)
	case nil:
		return id, fmt.Errorf("%w %q (null)", ErrMissingText, p.opts.TextField)
	default:
		return id, fmt.Errorf("%w (field %q is %T)", ErrTextType, p.opts.TextField, v)
	}
	if !utf8.ValidString(text) {
		return id, ErrInvalidUTF8
	}
	for k, v := range m {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = bytesToStrings(v)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return id, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	p.raw = append(p.raw[:0], bytes.TrimRight(buf.Bytes(), "\n")...)
	p.doc = Document{ID: id, Text: text, Raw: p.raw, Source: p.name, Record: p.row, Offset: p.row - 1}
	return id, nil
}

// bytesToStrings replaces byte slices in a reconstructed value by strings
// (invalid UTF-8 becoming U+FFFD), which encoding/json would otherwise
// write in base64.
func bytesToStrings(v any) any {
	switch v := v.(type) {
	case []byte:
		return string(bytes.ToValidUTF8(v, []byte("\uFFFD")))
	case map[string]any:
		for k, e := range v {
			v[k] = bytesToStrings(e)
		}
	case []any:
		for i, e := range v {
			v[i] = bytesToStrings(e)
		}
	}
	return v
}

// openParquet opens a Parquet file by name, or an object (s3://, gs://)
// through a local copy.
func openParquet(name string, opts Options) (Reader, error) {
	if objstore.IsURL(name) {
		f, size, v, err := copyObject(name)
		if err == nil {
			err = sameVersion(name, v, opts.Version)
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			return nil, err
		}
		p := NewParquet(f, size, name, opts)
		p.version = v
		return p, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	v := versionOf(f)
	if err := sameVersion(name, v, opts.Version); err != nil {
		f.Close()
		return nil, err
	}
	p := NewParquet(f, st.Size(), name, opts)
	p.version = v
	return p, nil
}

// copyObject copies the object url to a file of the temporary directory
// (TMPDIR) and returns it open, with its size and the object's version
// (the zero Version when the storage did not say). A Parquet reader reads in
// ranges, its footer first, then column chunks; object storage is read
// here in one sequential stream (internal/objstore), never in many small
// ranged requests. The copy takes the object's size on disk while it is
// read. Its name is removed at once where the system allows (Linux and
// macOS: the open file lives on, and a process killed half-way leaves
// nothing behind), else when the file is closed.
func copyObject(url string) (*tempCopy, int64, Version, error) {
	r, err := objstore.OpenURL(context.Background(), url)
	if err != nil {
		return nil, 0, Version{}, err
	}
	defer r.Close()
	v := versionOf(r)
	f, err := os.CreateTemp("", "neardup-parquet-*")
	if err != nil {
		return nil, 0, Version{}, fmt.Errorf("%s: a local copy for the Parquet reader: %w (set TMPDIR to a folder with room)", url, err)
	}
	t := &tempCopy{File: f}
	if os.Remove(f.Name()) != nil {
		t.remove = true
	}
	n, err := io.Copy(f, r)
	if err != nil {
		t.Close()
		return nil, 0, Version{}, fmt.Errorf("%s: copying it to %s for the Parquet reader: %w (set TMPDIR to a folder with room if the disk is full)", url, f.Name(), err)
	}
	return t, n, v, nil
}

// tempCopy is copyObject's file.
type tempCopy struct {
	*os.File
	remove bool // its name is still there: remove it on Close
}

func (t *tempCopy) Close() error {
	err := t.File.Close()
	if t.remove {
		os.Remove(t.Name())
	}
	return err
}
