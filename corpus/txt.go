package corpus

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// Lines reads plain text, one document per line. Blank lines (only white
// space) are skipped but counted. The id is FILE:LINE, the text is the line
// without its terminator (and, on the first line, without a UTF-8 byte
// order mark), and Raw is {"id": ID, "text": TEXT} (the keys
// named by Options.IDField and Options.TextField). A line with
// invalid UTF-8 (the error says where the first bad byte is, as for
// JSONL) or longer than Options.MaxDocBytes is rejected (see
// Options.OnInvalid); a read or decompression error ends the file as for
// JSONL.
type Lines struct {
	lines  lineReader
	closer io.Closer
	name   string
	opts   Options
	doc    Document
	raw    []byte
	err    error
	done   bool
}

// NewLines returns a reader over r; name is used in ids and errors. Close
// closes r.
func NewLines(r io.ReadCloser, name string, opts Options) *Lines {
	opts = opts.withDefaults()
	return &Lines{lines: newLineReader(r, opts.MaxDocBytes), closer: r, name: name, opts: opts}
}

// Next implements Reader.
func (t *Lines) Next() bool {
	for t.err == nil && !t.done {
		err := t.lines.next()
		if err == io.EOF {
			t.done = true
			return false
		}
		l := &t.lines
		id := t.name + ":" + strconv.FormatInt(l.line, 10)
		rerr := func(e error) {
			end, _, stop := reject(&t.opts, t.closer, &RecordError{File: t.name, Record: l.line, Offset: l.start, ID: id, Err: e})
			if stop != nil {
				t.err = stop
			}
			t.done = t.done || end
		}
		switch {
		case err == ErrTooLarge:
			rerr(l.tooLarge())
			continue
		case errors.Is(err, ErrCorrupt):
			rerr(err)
			t.done = true
			return false
		case err != nil: // the file itself failed: no bad record to skip
			t.err = &RecordError{File: t.name, Record: l.line, Offset: l.start, ID: id, Err: err}
			t.done = true
			return false
		}
		line := l.buf
		if l.start == 0 {
			// A byte order mark (Windows editors write one) is no part
			// of the first document.
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !utf8.Valid(line) {
			rerr(UTF8Error(line))
			continue
		}
		text := string(line)
		t.raw = append(t.raw[:0], '{')
		if t.opts.IDField != t.opts.TextField {
			t.raw = AppendJSONString(t.raw, t.opts.IDField)
			t.raw = append(t.raw, ':')
			t.raw = AppendJSONString(t.raw, id)
			t.raw = append(t.raw, ',')
		}
		t.raw = AppendJSONString(t.raw, t.opts.TextField)
		t.raw = append(t.raw, ':')
		t.raw = AppendJSONString(t.raw, text)
		t.raw = append(t.raw, '}')
		t.doc = Document{ID: id, Text: text, Raw: t.raw, Source: t.name, Record: l.line, Offset: l.start}
		return true
	}
	return false
}

// utf8BOM is the UTF-8 byte order mark, U+FEFF.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// Doc implements Reader.
func (t *Lines) Doc() *Document { return &t.doc }

// Err implements Reader.
func (t *Lines) Err() error { return t.err }

// Close implements Reader.
func (t *Lines) Close() error { return t.closer.Close() }

// AppendJSONString appends s to dst as a JSON string and returns it; it
// does not allocate beyond growing dst. Invalid UTF-8 becomes
// U+FFFD; <, > and & are kept as they are (unlike encoding/json).
func AppendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
