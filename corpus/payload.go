package corpus

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/ianaindex"

	"github.com/neardup/neardup/text"
)

// httpResponse splits an HTTP response (status line, headers, body) into
// the values of the headers that matter and the body. ok is false when
// block does not start with an HTTP status line.
func httpResponse(block []byte) (contentType, transferEnc, contentEnc string, body []byte, ok bool) {
	if len(block) < 5 || !strings.EqualFold(string(block[:5]), "HTTP/") {
		return "", "", "", block, false
	}
	rest := block
	first := true
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		var line []byte
		if i < 0 {
			line, rest = rest, nil
		} else {
			line, rest = rest[:i], rest[i+1:]
		}
		line = bytes.TrimRight(line, "\r")
		if first {
			first = false
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			continue
		}
		v := string(bytes.TrimSpace(value))
		switch strings.ToLower(string(bytes.TrimSpace(name))) {
		case "content-type":
			if contentType == "" {
				contentType = v
			}
		case "transfer-encoding":
			transferEnc = strings.ToLower(v)
		case "content-encoding":
			contentEnc = strings.ToLower(v)
		}
	}
	return contentType, transferEnc, contentEnc, rest, true
}

// maxDecoded bounds decompressed HTTP bodies, against decompression bombs.
const maxDecoded = 64 << 20

// decodeBody undoes chunked transfer coding and gzip, deflate or zstd
// content coding when the body really is encoded: archives often keep the
// headers of the original response while storing the decoded body. A body
// that fails to decode is used as it is.
func decodeBody(body []byte, transferEnc, contentEnc string, limit int) []byte {
	if strings.Contains(transferEnc, "chunked") && looksChunked(body) {
		if b, err := io.ReadAll(io.LimitReader(httputil.NewChunkedReader(bytes.NewReader(body)), int64(limit)+1)); len(b) > 0 || err == nil {
			body = b
		}
	}
	var r io.Reader
	switch {
	case contentEnc == "":
	case strings.Contains(contentEnc, "gzip") && bytes.HasPrefix(body, gzipMagic):
		if zr, err := gzip.NewReader(bytes.NewReader(body)); err == nil {
			r = zr
		}
	case strings.Contains(contentEnc, "zstd") && bytes.HasPrefix(body, zstdMagic):
		if zr, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoded)); err == nil {
			defer zr.Close()
			r = zr
		}
	case strings.Contains(contentEnc, "deflate") && !looksLikeText(body):
		if zr, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(body))
		}
	}
	if r != nil {
		if b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1)); len(b) > 0 || err == nil {
			body = b
		}
	}
	return body
}

// looksChunked reports whether body starts like chunked transfer coding:
// hex digits, optional extensions, CRLF.
func looksChunked(body []byte) bool {
	i := 0
	for i < len(body) && i < 16 && isHex(body[i]) {
		i++
	}
	if i == 0 || i >= len(body) {
		return false
	}
	return body[i] == '\r' || body[i] == ';' || body[i] == '\n' || body[i] == ' '
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// looksLikeText reports whether the start of body is printable ASCII.
func looksLikeText(body []byte) bool {
	for _, c := range body[:min(len(body), 64)] {
		if c < 0x09 || c > 0x7e {
			return false
		}
	}
	return true
}

// payloadKind says how a payload becomes text.
type payloadKind uint8

const (
	kindSkip  payloadKind = iota // not text: no document
	kindPlain                    // text/*: the decoded text as it is
	kindHTML                     // text/html, application/xhtml+xml: HTMLToText or MainText
)

// kindOf classifies a payload by its media type, sniffing the content when
// there is none (or a generic one).
func kindOf(contentType string, body []byte) payloadKind {
	media := strings.ToLower(strings.TrimSpace(contentType))
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		media = mt
	} else if i := strings.IndexByte(media, ';'); i >= 0 {
		media = strings.TrimSpace(media[:i])
	}
	switch media {
	case "", "unknown", "unknown/unknown", "application/octet-stream", "application/x-unknown-content-type":
		media, _, _ = strings.Cut(http.DetectContentType(body), ";")
	}
	switch {
	case media == "text/html", media == "application/xhtml+xml", strings.HasSuffix(media, "/html"):
		return kindHTML
	case strings.HasPrefix(media, "text/"), media == "application/json", media == "application/xml", strings.HasSuffix(media, "+xml"):
		return kindPlain
	}
	return kindSkip
}

// charsetOf returns the encoding of body: a byte order mark, then the
// charset parameter of contentType, then (unless the body is valid UTF-8)
// a <meta> charset, and windows-1252 as the last resort. nil means UTF-8.
func charsetOf(body []byte, contentType string) encoding.Encoding {
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if label := params["charset"]; label != "" && !hasBOM(body) {
			if e := lookupCharset(label); e != nil {
				if e == encoding.Nop {
					return nil
				}
				return e
			}
		}
	}
	e, name, certain := charset.DetermineEncoding(body, "")
	if name == "utf-8" || (!certain && utf8.Valid(body)) {
		return nil
	}
	return e
}

var boms = [][]byte{{0xef, 0xbb, 0xbf}, {0xfe, 0xff}, {0xff, 0xfe}}

func hasBOM(b []byte) bool {
	for _, bom := range boms {
		if bytes.HasPrefix(b, bom) {
			return true
		}
	}
	return false
}

// lookupCharset finds an encoding by label, first as the WHATWG Encoding
// Standard (what browsers use) defines labels, then by IANA name. It
// returns encoding.Nop for UTF-8 and nil when the label is unknown.
func lookupCharset(label string) encoding.Encoding {
	label = strings.ToLower(strings.Trim(strings.TrimSpace(label), `"'`))
	switch label {
	case "utf-8", "utf8", "utf-8-sig", "unicode-1-1-utf-8":
		return encoding.Nop
	}
	if e, name := charset.Lookup(label); e != nil {
		if name == "utf-8" {
			return encoding.Nop
		}
		return e
	}
	if e, err := ianaindex.IANA.Encoding(label); err == nil && e != nil {
		return e
	}
	return nil
}

// toUTF8 decodes body from the charset of its content type or content to
// valid UTF-8 (a missing charset with invalid UTF-8 falls back to
// windows-1252; bytes that cannot be decoded become U+FFFD). It may
// return body itself.
func toUTF8(body []byte, contentType string) []byte {
	e := charsetOf(body, contentType)
	if e == nil {
		body = bytes.TrimPrefix(body, boms[0])
		if utf8.Valid(body) {
			return body
		}
		return bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		return bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	out = bytes.TrimPrefix(out, boms[0])
	if !utf8.Valid(out) {
		out = bytes.ToValidUTF8(out, []byte("\uFFFD"))
	}
	return out
}

// payloadText appends the text of a payload to dst: HTML through
// text.HTMLToText, or text.MainText when main is set, other text as it is,
// all after decoding the charset. ok is false for payloads that are not
// text.
func payloadText(dst, body []byte, contentType string, main bool) (out []byte, ok bool) {
	kind := kindOf(contentType, body)
	if kind == kindSkip {
		return dst, false
	}
	body = toUTF8(body, contentType)
	if kind == kindPlain {
		return append(dst, body...), true
	}
	out, _, _ = text.ExtractHTML(dst, bytes.NewReader(body), !main) // a bytes.Reader never fails
	return out, true
}
