package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// JSONL reads one JSON object per line. Blank lines are skipped. The text
// field must be a JSON string; the id field may be a string or a number (its
// literal text). A record is rejected (see Options.OnInvalid) when it is
// not valid JSON, not an object, holds invalid UTF-8, lacks the text field
// or has a non-string text, or is longer than Options.MaxDocBytes. A read
// or decompression error (ErrCorrupt) ends the file: with OnInvalid
// skipping it the reader stops cleanly after the last complete line.
type JSONL struct {
	lines  lineReader
	closer io.Closer
	name   string
	opts   Options
	doc    Document
	err    error
	done   bool
}

// NewJSONL returns a reader over r; name is used in ids and errors. Close
// closes r.
func NewJSONL(r io.ReadCloser, name string, opts Options) *JSONL {
	opts = opts.withDefaults()
	return &JSONL{
		lines:  newLineReader(r, opts.MaxDocBytes),
		closer: r,
		name:   name,
		opts:   opts,
	}
}

// Next implements Reader.
func (j *JSONL) Next() bool {
	for j.err == nil && !j.done {
		err := j.lines.next()
		if err == io.EOF {
			j.done = true
			return false
		}
		l := &j.lines
		// rerr reports a bad record; it returns whether the file ends.
		rerr := func(e error, id string) bool {
			end, _, stop := reject(&j.opts, j.closer, &RecordError{File: j.name, Record: l.line, Offset: l.start, ID: id, Err: e})
			if stop != nil {
				j.err = stop
			}
			j.done = end
			return end
		}
		switch {
		case err == ErrTooLarge:
			rerr(l.tooLarge(), "")
			continue
		case errors.Is(err, ErrCorrupt):
			rerr(err, "")
			j.done = true
			return false
		case err != nil: // the file itself failed: no bad record to skip
			j.err = &RecordError{File: j.name, Record: l.line, Offset: l.start, Err: err}
			j.done = true
			return false
		}
		if len(bytes.TrimSpace(l.buf)) == 0 {
			continue
		}
		if j.opts.RawOnly {
			j.doc = Document{Raw: l.buf, Source: j.name, Record: l.line, Offset: l.start}
			return true
		}
		if !utf8.Valid(l.buf) {
			id, err := invalidUTF8(l.buf, &j.opts)
			rerr(err, id)
			continue
		}
		j.doc = Document{Raw: l.buf, Source: j.name, Record: l.line, Offset: l.start}
		if err := parseJSONL(&j.doc, &j.opts); err != nil {
			rerr(err, j.doc.ID)
			continue
		}
		return true
	}
	return false
}

// Lines is Next for a caller that splits the records itself (package
// dedup splits them on its workers): for a reader made with
// Options.RawOnly, it appends to dst the whole lines that the reader has
// read ahead into its buffer and not yet returned, up to max bytes (at
// least one line), and returns them with the number and byte offset of
// the first; SplitLines splits them as Next would have. ok is false when
// no whole line is buffered (and for a reader without RawOnly or one that
// has ended): then Next reads the next record, filling the buffer again.
// Lines itself reads nothing, so it meets no error.
func (j *JSONL) Lines(dst []byte, max int) (lines []byte, line, offset int64, ok bool) {
	if !j.opts.RawOnly || j.err != nil || j.done {
		return dst, 0, 0, false
	}
	line, offset = j.lines.line+1, j.lines.off
	at := len(dst)
	if dst, ok = j.lines.whole(dst, max); !ok {
		return dst, 0, 0, false
	}
	return dst[at:], line, offset, true
}

// SplitLines calls fn for each record of lines, whole lines of the file
// name from JSONL.Lines whose first is line number line at byte offset
// offset, as Next with Options.RawOnly would return them: blank lines
// skipped; the record is lines[lo:hi], without its line terminator (\n or
// \r\n); line and offset are its own. A line longer than
// Options.MaxDocBytes comes with the error that Next reports for it (Next,
// which reads on, first looks ahead for damage: see DamagedAfter), else
// err is nil. SplitLines returns fn's first error.
func SplitLines(lines []byte, name string, line, offset int64, opts Options, fn func(lo, hi int, line, offset int64, err *RecordError) error) error {
	maxBytes := opts.withDefaults().MaxDocBytes
	for lo := 0; lo < len(lines); {
		next := len(lines)
		if k := bytes.IndexByte(lines[lo:], '\n'); k >= 0 {
			next = lo + k + 1
		}
		hi := next
		if hi > lo && lines[hi-1] == '\n' {
			hi--
		}
		if hi > lo && lines[hi-1] == '\r' {
			hi--
		}
		var err error
		switch {
		case hi-lo > maxBytes:
			err = fn(lo, hi, line, offset, &RecordError{File: name, Record: line, Offset: offset,
				Err: &SizeError{Length: int64(hi - lo), Limit: maxBytes}})
		case len(bytes.TrimSpace(lines[lo:hi])) > 0:
			err = fn(lo, hi, line, offset, nil)
		}
		if err != nil {
			return err
		}
		line++
		offset += int64(next - lo)
		lo = next
	}
	return nil
}

// ParseJSONL fills in the ID and Text of a document read with
// Options.RawOnly from its Raw record, Source and Record, as the reader
// would have without RawOnly; the error is the one the reader would have
// reported (with d.ID set when the record has an id).
func ParseJSONL(d *Document, opts Options) error {
	opts = opts.withDefaults()
	if !utf8.Valid(d.Raw) {
		var err error
		d.ID, err = invalidUTF8(d.Raw, &opts)
		return err
	}
	return parseJSONL(d, &opts)
}

// ParseJSONLShared is ParseJSONL for a caller that holds on to d.Raw: the
// Text it sets shares d.Raw's memory when the JSON string has no escape
// (no copy, no allocation), so it is valid only while d.Raw is neither
// changed nor reused. ID is always a string of its own. It is how
// package dedup parses records on its workers (records split with
// Options.RawOnly on the reading goroutine).
func ParseJSONLShared(d *Document, opts Options) error {
	opts = opts.withDefaults()
	if !utf8.Valid(d.Raw) {
		var err error
		d.ID, err = invalidUTF8(d.Raw, &opts)
		return err
	}
	var err error
	d.ID, d.Text, err = parseRecordShared(d.Raw, d.Source, d.Record, &opts, true)
	return err
}

// invalidUTF8 returns the error of a record that is not valid UTF-8,
// wrapping ErrInvalidUTF8 and saying where the first bad byte is, and the
// record's id when it has one (read with the bad bytes replaced), so that
// the message names the document as it does for other bad records.
func invalidUTF8(raw []byte, opts *Options) (id string, err error) {
	err = UTF8Error(raw)
	if rawID, _, _, serr := scanObject(bytes.ToValidUTF8(raw, []byte("\uFFFD")), opts.IDField, opts.TextField); serr == nil && rawID != nil {
		id = idString(rawID)
	}
	return id, err
}

// UTF8Error returns the error of a line that is not valid UTF-8: it wraps
// ErrInvalidUTF8 and says where the first bad byte is, "invalid UTF-8
// (byte 0xff at byte 3 of the line)". The JSONL and text readers say it
// so, and compare's @FILE arguments.
func UTF8Error(raw []byte) error {
	at := 0
	for at < len(raw) {
		r, n := utf8.DecodeRune(raw[at:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		at += n
	}
	return fmt.Errorf("%w (byte 0x%02x at byte %d of the line)", ErrInvalidUTF8, raw[min(at, len(raw)-1)], at+1)
}

// parseJSONL sets the id and text of d from d.Raw. It sets the id it found
// even on error, for the error message. One pass (scanObject) validates the
// line and finds the two fields, several times faster than json.Valid
// followed by a scan, let alone decoding into a map.
func parseJSONL(d *Document, opts *Options) error {
	var err error
	d.ID, d.Text, err = parseRecord(d.Raw, d.Source, d.Record, opts)
	return err
}

func parseRecord(line []byte, name string, lineNo int64, opts *Options) (id, text string, err error) {
	return parseRecordShared(line, name, lineNo, opts, false)
}

// parseRecordShared is parseRecord; with share, text may point into line
// (decodeString).
func parseRecordShared(line []byte, name string, lineNo int64, opts *Options, share bool) (id, text string, err error) {
	rawID, rawText, isObject, err := scanObject(line, opts.IDField, opts.TextField)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if !isObject {
		return "", "", ErrNotObject
	}
	if rawID != nil {
		id = idString(rawID)
	}
	if id == "" {
		id = name + ":" + strconv.FormatInt(lineNo, 10)
	}
	if rawText == nil {
		return id, "", fmt.Errorf("%w %q%s", ErrMissingText, opts.TextField, recordFields(line))
	}
	text, ok := decodeString(rawText, share)
	if !ok {
		return id, "", fmt.Errorf("%w (field %q holds %s)%s", ErrTextType, opts.TextField, jsonKind(rawText), recordFields(line))
	}
	return id, text, nil
}

// jsonKind names the kind of a JSON value for an error message: "a
// number", "an object", ...
func jsonKind(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '"':
		return "a string with a bad escape"
	}
	return "a number"
}

// recordFields names the fields of a JSON object for an error message:
// " (the record has: a, b, c)", the first twenty in order; "" for none.
func recordFields(line []byte) string {
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	var names []string
	for dec.More() && len(names) <= 20 {
		t, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := t.(string)
		names = append(names, strconv.Quote(k))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	switch {
	case len(names) == 0:
		return " (the record has no fields)"
	case len(names) > 20:
		names = append(names[:20], "...")
	}
	return " (the record has: " + strings.Join(names, ", ") + ")"
}

// jsonString decodes a JSON string value; ok is false for other values.
func jsonString(raw []byte) (string, bool) { return decodeString(raw, false) }

// decodeString is jsonString; with share, a string without escapes is
// returned without a copy: it points into raw.
func decodeString(raw []byte, share bool) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	switch {
	case len(inner) == 0:
		return "", true
	case !plainString(inner):
		b, ok := unquote(make([]byte, 0, len(inner)), inner)
		return string(b), ok
	case share:
		return unsafe.String(&inner[0], len(inner)), true
	}
	return string(inner), true
}

// plainString reports whether the body of a JSON string literal is its own
// text: no escape, no quote, no control character, valid UTF-8. One pass,
// plus a UTF-8 check when it holds non-ASCII bytes.
func plainString(b []byte) bool {
	ascii := true
	for _, c := range b {
		switch {
		case c == '\\' || c == '"' || c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || utf8.Valid(b)
}

// unquote appends the decoded inner part of a JSON string literal (the
// bytes between the quotes) to dst. It decodes as encoding/json does:
// invalid UTF-8 and unpaired surrogate escapes become U+FFFD. ok is false
// when s is not a valid string body (a bad escape, a bare quote or a
// control character).
func unquote(dst, s []byte) ([]byte, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return dst, false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok {
					return dst, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := lowSurrogate(s[i:]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, false
			}
			i += 2
		case c == '"' || c < 0x20:
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, w := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && w == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+w]...)
			}
			i += w
		}
	}
	return dst, true
}

// lowSurrogate returns the rune of a \uXXXX escape at the start of s.
func lowSurrogate(s []byte) (rune, bool) {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return 0, false
	}
	return hex4(s[2:])
}

// hex4 decodes four hexadecimal digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// matchKey reports whether the quoted JSON string key equals k.
func matchKey(key []byte, k string) bool {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == k
	}
	s, _ := jsonString(key)
	return s == k
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// idString renders an id value: strings unquoted, numbers and other
// scalars as their JSON text, null as "".
func idString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if s, ok := jsonString(raw); ok {
		return s
	}
	return string(raw)
}

// Doc implements Reader.
func (j *JSONL) Doc() *Document { return &j.doc }

// Err implements Reader.
func (j *JSONL) Err() error { return j.err }

// Close implements Reader.
func (j *JSONL) Close() error { return j.closer.Close() }

// Field returns the value of the top-level member name of the JSON object
// raw (a Document's Raw): a string unquoted, any other value as its JSON
// text. It is an error when raw is not a JSON object or has no such member.
func Field(raw []byte, name string) (string, error) {
	v, _, isObject, err := scanObject(raw, name, "")
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %v", ErrSyntax, err)
	case !isObject:
		return "", ErrNotObject
	case v == nil:
		return "", fmt.Errorf("missing field %q%s", name, recordFields(raw))
	}
	if s, ok := jsonString(v); ok {
		return s, nil
	}
	return string(v), nil
}
