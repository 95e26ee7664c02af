package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
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
		rerr := func(e error, id string) {
			if e := invalid(&j.opts, &RecordError{File: j.name, Record: l.line, Offset: l.start, ID: id, Err: e}); e != nil {
				j.err = e
			}
		}
		switch {
		case err == ErrTooLarge:
			rerr(fmt.Errorf("%w (%d bytes)", ErrTooLarge, j.opts.MaxDocBytes), "")
			continue
		case err != nil:
			rerr(err, "")
			j.done = true
			return false
		}
		if len(bytes.TrimSpace(l.buf)) == 0 {
			continue
		}
		if !utf8.Valid(l.buf) {
			rerr(ErrInvalidUTF8, "")
			continue
		}
		id, text, err := j.parse()
		if err != nil {
			rerr(err, id)
			continue
		}
		j.doc = Document{ID: id, Text: text, Raw: l.buf, Source: j.name, Record: l.line, Offset: l.start}
		return true
	}
	return false
}

// parse extracts the id and text of the current line. It returns the id
// it found even on error, for the error message. One pass (scanObject)
// validates the line and finds the two fields, several times faster than
// json.Valid followed by a scan, let alone decoding into a map.
func (j *JSONL) parse() (id, text string, err error) {
	line := j.lines.buf
	rawID, rawText, isObject, err := scanObject(line, j.opts.IDField, j.opts.TextField)
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
		id = j.name + ":" + strconv.FormatInt(j.lines.line, 10)
	}
	if rawText == nil {
		return id, "", fmt.Errorf("%w %q", ErrMissingText, j.opts.TextField)
	}
	text, ok := jsonString(rawText)
	if !ok {
		return id, "", fmt.Errorf("%w (field %q)", ErrTextType, j.opts.TextField)
	}
	return id, text, nil
}

// jsonString decodes a JSON string value; ok is false for other values.
func jsonString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
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
		return "", fmt.Errorf("missing field %q", name)
	}
	if s, ok := jsonString(v); ok {
		return s, nil
	}
	return string(v), nil
}
