package corpus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/neardup/neardup/internal/human"
)

// Errors of the WARC and ARC reader, wrapped in a *RecordError.
var (
	// ErrMalformed marks a record whose header cannot be parsed: no
	// WARC/ARC header line where a record should start, a header line
	// that is too long, a missing or invalid Content-Length.
	ErrMalformed = errors.New("malformed record")
)

// Limits of the WARC and ARC reader.
const (
	maxHeaderLine  = 64 << 10 // one header line
	maxHeaderBlock = 1 << 20  // all header lines of one record
)

// WARC reads web archives: WARC (0.18, 0.17, 1.0, 1.1) and ARC (versions 1
// and 2), record by record; a file may mix them. The stream given to
// NewWARC is already decompressed (Open decompresses .gz files, whether
// they hold one gzip member per record or one for the whole file).
//
// A document is made of each WARC response, resource and conversion
// record, and of each ARC record but the filedesc:// header, whose payload
// is text: an HTTP envelope (status line and headers) is skipped when
// present, chunked transfer coding and gzip, deflate or zstd content
// coding are undone when the body really is encoded, the charset of the
// HTTP Content-Type (else of the record's Content-Type, else a byte order
// mark or <meta> charset) is decoded to UTF-8, and HTML (text/html,
// application/xhtml+xml) is turned into text with text.HTMLToText (the
// whole visible text), or with text.MainText (the main content) when
// Options.HTMLMain is set. Other
// text/* payloads are kept as they are. Other records (warcinfo,
// request, metadata, revisit), resource records with a metadata:// URI
// (crawler logs and settings), payloads that are not text (images, PDF)
// and empty payloads make no document and no error.
//
// The id is the WARC-Target-URI (the URL for ARC), or, when
// Options.IDField names a WARC header that the record has (for example
// "WARC-TREC-ID" or "WARC-Record-ID"), that header's value; FILE:RECORD when
// there is neither. Raw is {"id": ..., "url": ..., "date": ...,
// "content_type": ..., "text": ...}, with the id and text keys named by
// Options.IDField and Options.TextField. The date is WARC-Date as written
// (ARC dates become RFC 3339), content_type the payload's media type.
// Record counts every record from 1, including those that make no
// document; Offset is the offset of the record in the decompressed
// stream.
//
// A record without a valid header (no WARC/ or ARC header line where one
// must start, no or an invalid Content-Length) is an error wrapping
// ErrMalformed; with Options.OnInvalid skipping it the reader scans ahead
// to the next line that starts a record. A record cut short by the end
// of the input wraps ErrCorrupt and ends the file, as does a decompression
// error, except in a gzip file with a member per record: with
// Options.OnInvalid skipping it, reading goes on at the next member that
// decompresses (see Open), and from there at the next record. A payload over Options.MaxDocBytes wraps ErrTooLarge and is
// skipped over without being read into memory.
type WARC struct {
	r      *bufio.Reader
	closer io.Closer
	name   string
	opts   Options
	off    int64 // offset of the next unread byte
	rec    int64 // number of the current record
	doc    Document
	err    error
	done   bool
	resync bool // scan for the next record header

	hdr     warcHeader
	block   []byte
	text    []byte
	raw     []byte
	pending []byte // a header line read while resyncing
}

// warcHeader is the parsed header of one record.
type warcHeader struct {
	arc         bool
	version     string
	typ         string // WARC-Type, lower case; "" for ARC
	url         string
	date        string
	contentType string // record Content-Type
	length      int64
	id          string // the header named by Options.IDField
}

// NewWARC returns a reader over the decompressed stream r; name is used
// in ids and errors. Close closes r.
func NewWARC(r io.ReadCloser, name string, opts Options) *WARC {
	return &WARC{r: bufio.NewReaderSize(r, 256<<10), closer: r, name: name, opts: opts.withDefaults()}
}

// Doc implements Reader.
func (w *WARC) Doc() *Document { return &w.doc }

// Err implements Reader.
func (w *WARC) Err() error { return w.err }

// Close implements Reader.
func (w *WARC) Close() error { return w.closer.Close() }

// report routes a bad record through Options.OnInvalid (see reject); it
// reports whether reading may go on.
func (w *WARC) report(start int64, id string, err error) bool {
	end, gap, stop := reject(&w.opts, w.closer, &RecordError{File: w.name, Record: w.rec, Offset: start, ID: id, Err: err})
	switch {
	case stop != nil:
		w.err = stop
		return false
	case end:
		w.done = true
		return false
	}
	w.resync = w.resync || gap
	return true
}

// Next implements Reader.
func (w *WARC) Next() bool {
	for w.err == nil && !w.done {
		start, err := w.readHeader()
		if err == io.EOF {
			w.done = true
			return false
		}
		if err != nil {
			if errors.Is(err, ErrMalformed) {
				w.resync = true
				if !w.report(start, "", err) {
					return false
				}
				continue
			}
			if w.fail(start, "", err) {
				continue
			}
			return false
		}
		if w.nextDoc(start) {
			return true
		}
	}
	return false
}

// fail reports a read error; it reports whether reading may go on, which
// it may after a damaged gzip member when bad records are skipped: the
// reader then scans for the next record.
func (w *WARC) fail(start int64, id string, err error) bool {
	if w.report(start, id, err) && errors.Is(err, errGzipGap) {
		w.resync = true
		return true
	}
	w.done = true
	return false
}

// nextDoc reads the block of the record whose header is in w.hdr and
// makes a document of it; it reports whether it did.
func (w *WARC) nextDoc(start int64) bool {
	h := &w.hdr
	id := h.id
	if id == "" {
		id = h.url
	}
	wanted := h.arc && !strings.HasPrefix(h.url, "filedesc:")
	if !h.arc {
		switch h.typ {
		case "response", "conversion":
			wanted = true
		case "resource":
			// Crawlers store their own logs and settings as resource
			// records under metadata:// URIs (wget, Heritrix).
			wanted = !strings.HasPrefix(h.url, "metadata:")
		}
	}
	// Records that make no document are read too (when not over the
	// size limit), so that a wrong Content-Length in any record is found.
	if h.length > int64(w.opts.MaxDocBytes) {
		if err := w.discard(h.length); err != nil {
			w.fail(start, id, err)
			return false
		}
		if wanted && !w.report(start, id, &SizeError{Length: h.length, Limit: w.opts.MaxDocBytes}) {
			return false
		}
		return false
	}
	if cap(w.block) < int(h.length) {
		w.block = make([]byte, h.length)
	}
	w.block = w.block[:h.length]
	n, err := io.ReadFull(w.r, w.block)
	w.off += int64(n)
	if (err == io.EOF || err == io.ErrUnexpectedEOF) && holdsRecord(w.block[:n]) {
		// The input ends inside the block, which holds the start of
		// another record: the Content-Length is wrong, and the records
		// after this one are in the bytes read. Read them again,
		// scanning for the next record header. (Without one, the file
		// is cut short: the error below.)
		w.rescan(start, id, n, fmt.Sprintf("the input ends %s bytes after the header", human.Number(n)))
		return false
	}
	if err != nil {
		w.fail(start, id, w.truncated(err, h.length, int64(n)))
		return false
	}
	// A block is followed by a line end (CRLF CRLF in WARC, LF in ARC).
	// When it is not, and the block holds the start of another record,
	// the Content-Length is too large: the records it swallowed are read
	// again. (Peek consumes an error that comes with no data: a gap
	// after a lost gzip member is reported here, other errors again at
	// the next read.)
	next, perr := w.r.Peek(1)
	if errors.Is(perr, errGzipGap) && !w.fail(w.off, "", perr) {
		return false
	}
	if len(next) > 0 && next[0] != '\r' && next[0] != '\n' && holdsRecord(w.block) {
		w.rescan(start, id, n, "no line end follows the block")
		return false
	}
	if !wanted {
		return false
	}
	ct := h.contentType
	body := w.block
	if hct, te, ce, b, ok := httpResponse(body); ok {
		ct, body = hct, decodeBody(b, te, ce, w.opts.MaxDocBytes)
	} else if strings.Contains(strings.ToLower(ct), "application/http") {
		ct = "" // an HTTP record whose envelope is missing: sniff
	}
	if len(body) == 0 {
		return false
	}
	var ok bool
	w.text, ok = payloadText(w.text[:0], body, ct, w.opts.HTMLMain)
	if !ok {
		return false
	}
	if id == "" {
		id = w.name + ":" + strconv.FormatInt(w.rec, 10)
	}
	text := string(w.text)
	w.raw = w.appendRaw(w.raw[:0], id, ct, text)
	w.doc = Document{ID: id, Text: text, Raw: w.raw, Source: w.name, Record: w.rec, Offset: start}
	return true
}

// rescan reports the record whose header is in w.hdr as malformed and
// reads the n bytes of its block again, scanning for the next record.
func (w *WARC) rescan(start int64, id string, n int, why string) {
	err := fmt.Errorf("%w: Content-Length %d is wrong: %s; the block is scanned again for the records it holds", ErrMalformed, w.hdr.length, why)
	if w.report(start, id, err) {
		w.r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(w.block[:n])), w.r), 256<<10)
		w.off -= int64(n)
		w.resync = true
	}
}

// holdsRecord reports whether a line of b after the first may start a
// record.
func holdsRecord(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		b = b[i+1:]
		line := b
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		if startsRecord(bytes.TrimSuffix(line, []byte{'\r'})) {
			return true
		}
	}
}

// appendRaw appends the JSON object of a document.
func (w *WARC) appendRaw(dst []byte, id, ct, text string) []byte {
	h := &w.hdr
	dst = append(dst, '{')
	key := func(k string) {
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, k)
		dst = append(dst, ':')
	}
	switch w.opts.IDField {
	case "url", "date", "content_type", w.opts.TextField:
	default:
		key(w.opts.IDField)
		dst = AppendJSONString(dst, id)
	}
	if w.opts.TextField != "url" {
		key("url")
		dst = AppendJSONString(dst, h.url)
	}
	if w.opts.TextField != "date" {
		key("date")
		dst = AppendJSONString(dst, h.date)
	}
	if w.opts.TextField != "content_type" {
		key("content_type")
		dst = AppendJSONString(dst, mediaType(ct))
	}
	key(w.opts.TextField)
	dst = AppendJSONString(dst, text)
	return append(dst, '}')
}

// mediaType returns the media type of a Content-Type value, lower case,
// without parameters.
func mediaType(ct string) string {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

func (w *WARC) truncated(err error, want, got int64) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: record truncated: %s of %s bytes", ErrCorrupt, human.Number(got), human.Number(want))
	}
	return err
}

// discard skips n bytes of block.
func (w *WARC) discard(n int64) error {
	for n > 0 {
		k := int(min(n, 1<<30))
		d, err := w.r.Discard(k)
		w.off += int64(d)
		n -= int64(d)
		if err != nil {
			return w.truncated(err, n+int64(d), int64(d))
		}
	}
	return nil
}

// readLine reads one line without its line terminator. The slice is valid
// until the next read.
func (w *WARC) readLine() ([]byte, error) {
	if w.pending != nil {
		l := w.pending
		w.pending = nil
		return l, nil
	}
	line, err := w.r.ReadSlice('\n')
	w.off += int64(len(line))
	if err == bufio.ErrBufferFull {
		// Skip the rest of the overlong line.
		for err == bufio.ErrBufferFull {
			var more []byte
			more, err = w.r.ReadSlice('\n')
			w.off += int64(len(more))
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
		return nil, fmt.Errorf("%w: header line longer than %s bytes", ErrMalformed, human.Number(maxHeaderLine))
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > maxHeaderLine {
		return nil, fmt.Errorf("%w: header line longer than %s bytes", ErrMalformed, human.Number(maxHeaderLine))
	}
	return line, nil
}

// readHeader reads the header of the next record into w.hdr. It returns
// the offset of the record, io.EOF at the end of the input, an error
// wrapping ErrMalformed for a bad header (after which w.resync is set by
// the caller), or a read error.
func (w *WARC) readHeader() (start int64, err error) {
	w.hdr = warcHeader{}
	// Skip the blank lines between records; when resyncing, skip
	// everything up to a line that starts a record.
	var line []byte
	for {
		start = w.off
		line, err = w.readLine()
		if err != nil {
			if errors.Is(err, ErrMalformed) && w.resync {
				continue
			}
			if err == io.EOF {
				return start, err
			}
			if errors.Is(err, ErrMalformed) {
				w.rec++
			}
			return start, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !w.resync || startsRecord(line) {
			break
		}
	}
	w.resync = false
	w.rec++
	if bytes.HasPrefix(line, []byte("WARC/")) {
		return start, w.readWARCHeader(line)
	}
	if parseARCHeader(string(line), &w.hdr) {
		return start, nil
	}
	return start, fmt.Errorf("%w: %q is not a WARC or ARC header line", ErrMalformed, clip(line, 80))
}

// startsRecord reports whether line may be the first line of a record.
func startsRecord(line []byte) bool {
	if bytes.HasPrefix(line, []byte("WARC/")) {
		return true
	}
	var h warcHeader
	return parseARCHeader(string(line), &h)
}

// clip shortens b for an error message.
func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// readWARCHeader parses the named fields after the version line. Field
// names are case-insensitive, lines may end in LF or CRLF, lines without a
// colon are ignored, and a line starting with a space or tab continues the
// previous field.
func (w *WARC) readWARCHeader(version []byte) error {
	h := &w.hdr
	h.version = string(bytes.TrimSpace(version))
	length := ""
	haveLength := false
	total := 0
	last := ""
	for {
		line, err := w.readLine()
		if err == io.EOF {
			return fmt.Errorf("%w: header truncated", ErrCorrupt)
		}
		if err != nil {
			return err
		}
		total += len(line)
		if total > maxHeaderBlock {
			return fmt.Errorf("%w: header longer than %s bytes", ErrMalformed, human.Number(maxHeaderBlock))
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "content-length" {
				length += string(bytes.TrimSpace(line))
			}
			continue
		}
		name, value, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		n := strings.ToLower(string(bytes.TrimSpace(name)))
		v := string(bytes.TrimSpace(value))
		last = n
		switch n {
		case "warc-type":
			h.typ = strings.ToLower(v)
		case "warc-target-uri":
			h.url = strings.TrimSuffix(strings.TrimPrefix(v, "<"), ">")
		case "warc-date":
			h.date = v
		case "content-type":
			h.contentType = v
		case "content-length":
			if !haveLength {
				length, haveLength = v, true
			}
		}
		if n == strings.ToLower(w.opts.IDField) && h.id == "" {
			h.id = v
		}
	}
	if !haveLength {
		return fmt.Errorf("%w: %s record without Content-Length", ErrMalformed, h.version)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(length), 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%w: invalid Content-Length %q", ErrMalformed, clip([]byte(length), 40))
	}
	h.length = n
	return nil
}

// parseARCHeader parses an ARC record header line: version 1 is
// "URL IP-address Archive-date Content-type Archive-length", version 2
// "URL IP-address Archive-date Content-type Result-code Checksum Location
// Offset Filename Archive-length". A URL with spaces is accepted in
// version 1.
func parseARCHeader(line string, h *warcHeader) bool {
	f := strings.Fields(line)
	n := len(f)
	if n < 5 {
		return false
	}
	length, err := strconv.ParseInt(f[n-1], 10, 64)
	if err != nil || length < 0 {
		return false
	}
	var url, date, ct string
	switch {
	case n == 10 && isDigits(f[2]) && (isDigits(f[4]) || f[4] == "-"):
		url, date, ct = f[0], f[2], f[3]
	case isDigits(f[n-3]):
		url, date, ct = strings.Join(f[:n-4], " "), f[n-3], f[n-2]
	default:
		return false
	}
	if len(date) < 8 || len(date) > 17 || !strings.Contains(url, ":") {
		return false
	}
	*h = warcHeader{arc: true, url: url, date: arcDate(date), contentType: ct, length: length}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// arcDate turns a 14-digit ARC date (YYYYMMDDhhmmss, UTC) into RFC 3339; other
// dates are returned as they are.
func arcDate(d string) string {
	if t, err := time.Parse("20060102150405", d); err == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return d
}
