package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
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
	fields map[string]json.RawMessage
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
		fields: make(map[string]json.RawMessage, 8),
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
// it found even on error, for the error message.
func (j *JSONL) parse() (id, text string, err error) {
	clear(j.fields)
	if err := json.Unmarshal(j.lines.buf, &j.fields); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return "", "", ErrNotObject
		}
		return "", "", fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	if j.fields == nil { // the line was "null"
		j.fields = make(map[string]json.RawMessage, 8)
		return "", "", ErrNotObject
	}
	if raw, ok := j.fields[j.opts.IDField]; ok {
		id = idString(raw)
	}
	if id == "" {
		id = j.name + ":" + strconv.FormatInt(j.lines.line, 10)
	}
	raw, ok := j.fields[j.opts.TextField]
	if !ok {
		return id, "", fmt.Errorf("%w %q", ErrMissingText, j.opts.TextField)
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &text) != nil {
		return id, "", fmt.Errorf("%w (field %q)", ErrTextType, j.opts.TextField)
	}
	return id, text, nil
}

// idString renders an id value: strings unquoted, numbers and other
// scalars as their JSON text, null as "".
func idString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// Doc implements Reader.
func (j *JSONL) Doc() *Document { return &j.doc }

// Err implements Reader.
func (j *JSONL) Err() error { return j.err }

// Close implements Reader.
func (j *JSONL) Close() error { return j.closer.Close() }
