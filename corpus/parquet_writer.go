package corpus

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/neardup/neardup/internal/atomicfile"
)

// The Parquet writer must know every column before it writes the first
// row, but the records it is given may differ in their fields. It
// therefore spools the records (one JSON object per line) to a temporary
// file while it collects the top-level fields and the JSON types of their
// values, and writes the Parquet file on Commit:
//
//   - every field becomes an optional top-level column, named as the
//     field, in name order (parquet-go orders the fields of a group by name);
//   - a field whose values are all strings is a STRING column, all
//     booleans a BOOLEAN column, all integers that fit an int64 an INT64
//     column, all numbers a DOUBLE column;
//   - any other field (objects, arrays, explicit nulls, mixed types) is a
//     JSON column holding each value's JSON text;
//   - a record without a field has a null in its column, which the reader
//     leaves out of Raw again.
//
// Reading the file back with Parquet gives every field with its value
// (numbers, strings, booleans and JSON values compare equal as JSON). The
// pages are compressed with zstd.

// pqKind is the inferred type of a field, a small lattice: pqNone (not
// seen) < pqInt < pqFloat, and pqString, pqBool, pqJSON; any two different
// kinds other than pqInt and pqFloat join to pqJSON.
type pqKind uint8

const (
	pqNone pqKind = iota
	pqString
	pqBool
	pqInt
	pqFloat
	pqJSON
)

func joinKind(a, b pqKind) pqKind {
	switch {
	case a == pqNone:
		return b
	case a == b:
		return a
	case (a == pqInt && b == pqFloat) || (a == pqFloat && b == pqInt):
		return pqFloat
	}
	return pqJSON
}

// kindOfJSON classifies one JSON value.
func kindOfJSON(v []byte) pqKind {
	if len(v) == 0 {
		return pqJSON
	}
	switch v[0] {
	case '"':
		return pqString
	case 't', 'f':
		return pqBool
	case 'n', '{', '[':
		return pqJSON
	}
	if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return pqInt
	}
	if _, err := strconv.ParseFloat(string(v), 64); err == nil {
		return pqFloat
	}
	return pqJSON
}

// objectFields calls fn for each member of the JSON object in raw, in
// order; valid says raw is known to be valid JSON. The value slices alias
// raw.
func objectFields(raw []byte, valid bool, fn func(key string, value []byte)) error {
	if !valid && !json.Valid(raw) {
		var v any
		return json.Unmarshal(raw, &v)
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ErrNotObject
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] == '}' {
			return nil
		}
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		kEnd := skipString(raw, i)
		key, _ := jsonString(raw[i:kEnd])
		i = skipSpace(raw, kEnd)
		i = skipSpace(raw, i+1) // ':'
		vEnd := skipValue(raw, i)
		fn(key, raw[i:vEnd])
		i = vEnd
	}
}

type parquetWriter struct {
	path  string
	spool *os.File
	w     *bufio.Writer
	kinds map[string]pqKind
	buf   []byte
	done  bool
}

func newParquetWriter(path string) (*parquetWriter, error) {
	spool, err := os.CreateTemp("", "neardup-parquet-spool-*.jsonl")
	if err != nil {
		return nil, err
	}
	return &parquetWriter{path: path, spool: spool, w: bufio.NewWriterSize(spool, 256<<10), kinds: make(map[string]pqKind)}, nil
}

func (w *parquetWriter) Write(d *Document) error {
	if w.done {
		return errors.New("corpus: Write after Commit or Abort")
	}
	var err error
	w.buf, err = appendRecord(w.buf[:0], d)
	if err != nil {
		return err
	}
	err = objectFields(w.buf, false, func(k string, v []byte) {
		w.kinds[k] = joinKind(w.kinds[k], kindOfJSON(v))
	})
	if err != nil {
		return fmt.Errorf("document %q: Raw is not a JSON object: %w", d.ID, err)
	}
	w.buf = append(w.buf, '\n')
	_, err = w.w.Write(w.buf)
	return err
}

func (w *parquetWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.spool.Close()
	return os.Remove(w.spool.Name())
}

// schema builds the schema from the collected kinds; an empty output gets
// the columns id and text.
func (w *parquetWriter) schema() *parquet.Schema {
	g := parquet.Group{}
	for k, kind := range w.kinds {
		var n parquet.Node
		switch kind {
		case pqString:
			n = parquet.String()
		case pqBool:
			n = parquet.Leaf(parquet.BooleanType)
		case pqInt:
			n = parquet.Int(64)
		case pqFloat:
			n = parquet.Leaf(parquet.DoubleType)
		default:
			n = parquet.JSON()
		}
		g[k] = parquet.Optional(n)
	}
	if len(g) == 0 {
		g[DefaultIDField] = parquet.Optional(parquet.String())
		g[DefaultTextField] = parquet.Optional(parquet.String())
	}
	return parquet.NewSchema("document", g)
}

func (w *parquetWriter) Commit() (err error) {
	if w.done {
		return errors.New("corpus: Commit after Commit or Abort")
	}
	defer w.Abort()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: parquet: %v", w.path, r)
		}
	}()
	if err := w.w.Flush(); err != nil {
		return err
	}
	if _, err := w.spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	schema := w.schema()
	type column struct {
		index int
		kind  pqKind
	}
	cols := make(map[string]column, len(w.kinds))
	names := schema.Columns()
	for _, path := range names {
		leaf, _ := schema.Lookup(path...)
		cols[path[0]] = column{leaf.ColumnIndex, w.kinds[path[0]]}
	}
	out, err := atomicfile.Create(w.path)
	if err != nil {
		return err
	}
	defer out.Abort()
	pw := parquet.NewWriter(out, schema, parquet.Compression(&parquet.Zstd))
	r := bufio.NewReaderSize(w.spool, 256<<10)
	values := make([]parquet.Value, len(names))
	batch := make([]parquet.Row, 0, 256)
	flush := func() error {
		if _, err := pw.WriteRows(batch); err != nil {
			return fmt.Errorf("%s: %w", w.path, err)
		}
		batch = batch[:0]
		return nil
	}
	for line := 1; ; line++ {
		b, err := r.ReadBytes('\n')
		if err == io.EOF && len(b) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return err
		}
		for i := range values {
			values[i] = parquet.NullValue().Level(0, 0, i)
		}
		var convErr error
		objectFields(b, true, func(k string, v []byte) {
			c := cols[k]
			var pv parquet.Value
			switch c.kind {
			case pqString:
				var s string
				if err := json.Unmarshal(v, &s); err != nil {
					convErr = err
				}
				pv = parquet.ByteArrayValue([]byte(s))
			case pqBool:
				pv = parquet.BooleanValue(v[0] == 't')
			case pqInt:
				n, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil {
					convErr = err
				}
				pv = parquet.Int64Value(n)
			case pqFloat:
				f, err := strconv.ParseFloat(string(v), 64)
				if err != nil {
					convErr = err
				}
				pv = parquet.DoubleValue(f)
			default:
				pv = parquet.ByteArrayValue(slices.Clone(v))
			}
			values[c.index] = pv.Level(0, 1, c.index)
		})
		if convErr != nil {
			return fmt.Errorf("%s: record %d: %w", w.path, line, convErr)
		}
		batch = append(batch, slices.Clone(values))
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("%s: %w", w.path, err)
	}
	return out.Commit()
}
