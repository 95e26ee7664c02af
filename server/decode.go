package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The request bodies the clients send are almost always of one shape: an
// object with "id", "text" and "limit" (or "documents" and "limit"),
// strings with few escapes. fastScanner parses exactly that shape without
// reflection; anything else (another member, a \u escape of a surrogate, a
// fraction, invalid UTF-8, a syntax error) makes it give up, and the body
// is decoded again by encoding/json, the reference, which also words the
// errors. FuzzFastDecode checks that whatever the fast path accepts,
// encoding/json accepts with the same result.
type fastScanner struct {
	b   []byte
	i   int
	buf []byte // unescaping scratch
}

func (s *fastScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c.
func (s *fastScanner) next(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// null consumes the literal null.
func (s *fastScanner) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// key consumes an object key of plain ASCII (no escapes) and the colon.
func (s *fastScanner) key() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			k := s.b[start:s.i]
			s.i++
			return k, s.next(':')
		}
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// str consumes a string value (after white space) and returns it, a copy.
func (s *fastScanner) str() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	s.i++
	start := s.i
	// The common case: no escapes, ASCII.
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v := string(s.b[start:s.i])
			s.i++
			return v, true
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			break
		}
		s.i++
	}
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(s.buf), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && n == 1 {
				return "", false // encoding/json would substitute U+FFFD
			}
			s.buf = append(s.buf, s.b[s.i:s.i+n]...)
			s.i += n
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return "", false
			}
			e := s.b[s.i+1]
			s.i += 2
			switch e {
			case '"', '\\', '/':
				s.buf = append(s.buf, e)
			case 'b':
				s.buf = append(s.buf, '\b')
			case 'f':
				s.buf = append(s.buf, '\f')
			case 'n':
				s.buf = append(s.buf, '\n')
			case 'r':
				s.buf = append(s.buf, '\r')
			case 't':
				s.buf = append(s.buf, '\t')
			case 'u':
				if s.i+4 > len(s.b) {
					return "", false
				}
				v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
				if err != nil || v >= 0xd800 && v < 0xe000 {
					return "", false // surrogates: left to encoding/json
				}
				s.buf = utf8.AppendRune(s.buf, rune(v))
				s.i += 4
			default:
				return "", false
			}
		default:
			s.buf = append(s.buf, c)
			s.i++
		}
	}
	return "", false
}

// optString consumes a string or null into *dst.
func (s *fastScanner) optString(dst **string) bool {
	s.ws()
	if s.null() {
		*dst = nil
		return true
	}
	v, ok := s.str()
	if ok {
		*dst = &v
	}
	return ok
}

// optInt consumes an integer (without fraction or exponent, within int32)
// or null into *dst.
func (s *fastScanner) optInt(dst **int) bool {
	s.ws()
	if s.null() {
		*dst = nil
		return true
	}
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - digits
	if n == 0 || n > 9 || n > 1 && s.b[digits] == '0' {
		return false
	}
	if s.i < len(s.b) {
		if c := s.b[s.i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	v, err := strconv.Atoi(string(s.b[start:s.i]))
	if err != nil {
		return false
	}
	*dst = &v
	return true
}

// members consumes an object, calling member for each key (positioned at
// its value); member returns false to give up.
func (s *fastScanner) members(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		k, ok := s.key()
		if !ok || !member(k) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// doc consumes a document object into d (and its limit when lim is not
// nil).
func (s *fastScanner) doc(d *docIn, lim **int) bool {
	return s.members(func(k []byte) bool {
		switch {
		case asciiEqualFold(k, "id"):
			return s.optString(&d.ID)
		case asciiEqualFold(k, "text"):
			return s.optString(&d.Text)
		case lim != nil && asciiEqualFold(k, "limit"):
			return s.optInt(lim)
		}
		return false
	})
}

// end tells whether only white space is left.
func (s *fastScanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// asciiEqualFold is encoding/json's key matching for ASCII keys: exact or
// case-insensitive.
func asciiEqualFold(k []byte, name string) bool {
	if len(k) != len(name) {
		return false
	}
	for i := range k {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// fastDoc parses a single-document request body; ok is false when the
// body is not of the common shape (req is then unspecified).
func fastDoc(b []byte, req *docRequest) bool {
	s := fastScanner{b: b}
	*req = docRequest{}
	return s.doc(&req.docIn, &req.Limit) && s.end()
}

// fastBatch parses a batch request body; ok is false when the body is not
// of the common shape (req is then unspecified).
func fastBatch(b []byte, req *batchRequest) bool {
	s := fastScanner{b: b}
	*req = batchRequest{}
	return s.members(func(k []byte) bool {
		switch {
		case asciiEqualFold(k, "limit"):
			return s.optInt(&req.Limit)
		case asciiEqualFold(k, "documents"):
			s.ws()
			if s.null() {
				req.Documents = nil
				return true
			}
			docs := []docIn{}
			if !s.next('[') {
				return false
			}
			if s.next(']') {
				req.Documents = &docs
				return true
			}
			for {
				var d docIn
				if !s.doc(&d, nil) {
					return false
				}
				docs = append(docs, d)
				if s.next(',') {
					continue
				}
				if !s.next(']') {
					return false
				}
				req.Documents = &docs
				return true
			}
		}
		return false
	}) && s.end()
}

// bodyPool holds request body buffers.
var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer kept in bodyPool.
const maxPooledBody = 1 << 20

// readBody reads the whole body (within the limit set by wrap) into a
// pooled buffer; give it back with putBody when done. An oversized body is
// the *http.MaxBytesError. A body of declared length gets a buffer of that
// size, which admission has counted (growing by doubling would allocate
// up to twice the body, and as much again in the copies left behind).
func readBody(r *http.Request) (*bytes.Buffer, error) {
	if buf := takeBody(r.Context()); buf != nil {
		return buf, nil // read before the request took its slot (wrap)
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	buf.Reset()
	if r.ContentLength > 0 {
		// wrap refused a declared length over Config.MaxBodyBytes.
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r.Body); err != nil {
		putBody(buf)
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, err
		}
		// The connection's read deadline (the server's --timeout)
		// passed while the body trickled in: the client was too slow,
		// and the request is not malformed.
		var ne net.Error
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return nil, errorf(http.StatusRequestTimeout, "the request body did not arrive within the server's time limit of a request (--timeout); nothing was read or written")
		}
		return nil, errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	return buf, nil
}

// takeBody returns the body that wrap read for the request of ctx, once:
// the context keeps no reference to it afterwards.
func takeBody(ctx context.Context) *bytes.Buffer {
	h, ok := ctx.Value(bodyKey{}).(*heldBody)
	if !ok {
		return nil
	}
	buf := h.buf
	h.buf = nil
	return buf
}

func putBody(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBody {
		bodyPool.Put(buf)
	}
}

// checkStrings returns a 400 naming the member of the JSON body b (for
// example documents[2].text) whose string is not valid Unicode: raw bytes
// that are not UTF-8, or a \u escape of a lone surrogate. encoding/json
// would silently replace either with U+FFFD, so that two distinct ids
// could collide. It returns nil for a body whose strings are all valid,
// and leaves syntax errors to the decoder.
func checkStrings(b []byte) error {
	// Every surrogate escape starts \uD or \ud; other escapes (Go clients
	// write <, > and & as \u003c...) need no second pass.
	if utf8.Valid(b) && !bytes.Contains(b, []byte(`\ud`)) && !bytes.Contains(b, []byte(`\uD`)) {
		return nil
	}
	return walkJSON(b, func(tok any, raw []byte, end int64, isKey bool, path func() string) error {
		if _, ok := tok.(string); ok && !validJSONString(raw) {
			what := path()
			if isKey {
				what = "a member name in " + what
			}
			return errorf(http.StatusBadRequest, "%s is not valid UTF-8 (bytes that are not UTF-8, or a lone surrogate escape, before byte %d)", what, end)
		}
		return nil
	})
}

// jsonPathAt names the member of the JSON body b whose value ends at byte
// off or, for an object or array, opens there (documents[3].text): where
// encoding/json's UnmarshalTypeError.Offset points. Its Field does not
// say which element of an array (documents.text). "" when none does.
func jsonPathAt(b []byte, off int64) string {
	var at string
	errFound := errors.New("found")
	walkJSON(b, func(tok any, raw []byte, end int64, isKey bool, path func() string) error {
		if isKey || end < off {
			return nil
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			return nil
		}
		at = path()
		return errFound
	})
	return at
}

// walkJSON calls visit with every token of the JSON body b (a string, a
// number, a delimiter ...), its raw bytes, the offset just after it,
// whether it is a member name, and a function naming where it is
// (documents[2].text; a member name's own member; "the body" at the top).
// It stops at visit's first error and returns it, and at a syntax error,
// which it leaves to the decoder (nil).
func walkJSON(b []byte, visit func(tok any, raw []byte, end int64, isKey bool, path func() string) error) error {
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		n       int
	}
	var stack []frame
	path := func() string {
		var sb strings.Builder
		for _, f := range stack {
			switch {
			case f.obj:
				k := f.key
				if k == "" {
					continue
				}
				if sb.Len() > 0 {
					sb.WriteByte('.')
				}
				sb.WriteString(k)
			default:
				fmt.Fprintf(&sb, "[%d]", f.n)
			}
		}
		if sb.Len() == 0 {
			return "the body"
		}
		return sb.String()
	}
	valueDone := func() {
		if len(stack) == 0 {
			return
		}
		if top := &stack[len(stack)-1]; top.obj {
			top.wantKey = true
		} else {
			top.n++
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var prev int64
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or a syntax error the decoder reports
		}
		end := dec.InputOffset()
		raw := b[prev:end]
		prev = end
		isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey
		if _, ok := tok.(string); !ok {
			isKey = false
		}
		if err := visit(tok, raw, end, isKey, path); err != nil {
			return err
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{':
				stack = append(stack, frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if isKey {
				top := &stack[len(stack)-1]
				top.key, top.wantKey = tok, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// validJSONString tells whether raw, the bytes of one JSON string token
// (with separators and white space around it), is valid UTF-8 and escapes
// only whole surrogate pairs.
func validJSONString(raw []byte) bool {
	if !utf8.Valid(raw) {
		return false
	}
	hex4 := func(i int) (rune, bool) {
		if i+4 > len(raw) {
			return 0, false
		}
		v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // \" \\ and the others
			continue
		}
		r, ok := hex4(i + 2)
		if !ok {
			return false
		}
		i += 5
		switch {
		case r >= 0xdc00 && r < 0xe000:
			return false // a low surrogate first
		case r >= 0xd800 && r < 0xdc00:
			if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return false
			}
			lo, ok := hex4(i + 3)
			if !ok || lo < 0xdc00 || lo >= 0xe000 {
				return false
			}
			i += 6
		}
	}
	return true
}
