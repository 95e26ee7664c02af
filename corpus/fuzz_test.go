package corpus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
)

// checkDocs reads r to the end, skipping bad records, and checks what
// every reader promises: valid UTF-8 text, Raw a JSON object whose text
// field is the text, records in increasing order.
func checkDocs(t *testing.T, r Reader, textField string) {
	t.Helper()
	var last int64
	for r.Next() {
		d := r.Doc()
		if !utf8.ValidString(d.Text) {
			t.Fatalf("record %d: text is not valid UTF-8: %q", d.Record, d.Text)
		}
		// Numbers stay json.Number: a valid record may hold one that no
		// float64 can (-1e1000), and the reader does not parse numbers.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(d.Raw))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("record %d: Raw is not a JSON object: %v: %q", d.Record, err, d.Raw)
		}
		if s, ok := m[textField].(string); !ok || s != d.Text {
			t.Fatalf("record %d: Raw[%q] = %q, text %q", d.Record, textField, m[textField], d.Text)
		}
		if d.Record <= last {
			t.Fatalf("record %d after record %d", d.Record, last)
		}
		last = d.Record
	}
	r.Close()
}

var skipAll = func(*RecordError) error { return nil }

func FuzzJSONL(f *testing.F) {
	f.Add([]byte(jsonlSample))
	f.Add([]byte(mixedJSONL))
	f.Add([]byte("{\"text\": \"a\\u0000b\\ud800\"}\n{\"text\":\"\"}\r\n[]\nnull\n{\"id\":null,\"text\":\"x\"}"))
	f.Add(compressFor(f, "x.gz", []byte(jsonlSample)))
	f.Add(compressFor(f, "x.zst", []byte(jsonlSample)))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{MaxDocBytes: 1 << 10, OnInvalid: skipAll}
		checkDocs(t, NewJSONL(newDecoder(io.NopCloser(bytes.NewReader(data)), compSniff), "f", opts), "text")
		// Without OnInvalid the reader stops at the first bad record with
		// a RecordError or a read error; it never panics.
		r := NewJSONL(io.NopCloser(bytes.NewReader(data)), "f", Options{MaxDocBytes: 1 << 10})
		for r.Next() {
		}
	})
}

func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\r\n\n\xff\n" + strings.Repeat("x", 300)))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDocs(t, NewLines(io.NopCloser(bytes.NewReader(data)), "f.txt", Options{MaxDocBytes: 256, OnInvalid: skipAll}), "text")
	})
}

func warcSeeds() [][]byte {
	seeds := [][]byte{
		[]byte(response("http://a/", "Content-Type: text/html; charset=iso-8859-1\r\n", "<p>caf\xe9</p>") + response("http://b/", "Content-Type: text/plain\r\n", "x")),
		[]byte(response("http://gz/", "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n", chunked(gzipMembers("<p>zipped</p>")))),
		[]byte("WARC/0.18\nWARC-Type: response\nContent-Length: 5\n\nhello\n\nWARC/1.0\r\nWARC-Type: resource\r\n\r\nWARC/1.0\r\nContent-Length: 99999\r\n\r\nshort"),
		[]byte(gzipMembers(response("http://a/", "", "<meta charset=gbk>\xd6\xd0"), "garbage\r\n")),
	}
	if b, err := os.ReadFile("testdata/wget.warc.gz"); err == nil {
		seeds = append(seeds, b)
	}
	return seeds
}

func arcSeeds() [][]byte {
	return [][]byte{
		[]byte(arcFiledesc + arcRecord("http://h/", "text/html", "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=windows-1251\r\n\r\n<p>\xcf\xf0</p>") + arcRecord("http://i/", "text/plain", "no envelope")),
		[]byte("http://j/ 127.0.0.1 20080509190241 text/plain 200 - - 0 x.arc 5\nhello\nhttp://k/ with space 1.2.3.4 20080509190241 text/html 3\n<p>\n"),
		[]byte(arcFiledesc + "http://broken/ 1.2.3.4 2008 text/html 10\nabc"),
	}
}

func fuzzWARC(t *testing.T, data []byte) {
	opts := Options{MaxDocBytes: 1 << 12, OnInvalid: skipAll}
	checkDocs(t, NewWARC(newDecoder(io.NopCloser(bytes.NewReader(data)), compSniff), "f.warc", opts), "text")
	r := NewWARC(io.NopCloser(bytes.NewReader(data)), "f.warc", Options{MaxDocBytes: 1 << 12})
	for r.Next() {
	}
}

func FuzzWARC(f *testing.F) {
	for _, s := range warcSeeds() {
		f.Add(s)
	}
	f.Fuzz(fuzzWARC)
}

func FuzzARC(f *testing.F) {
	for _, s := range arcSeeds() {
		f.Add(s)
	}
	f.Fuzz(fuzzWARC)
}

// FuzzPayload checks that any payload with any content type becomes
// valid UTF-8 without panicking.
func FuzzPayload(f *testing.F) {
	f.Add([]byte("<p>caf\xe9</p>"), "text/html; charset=iso-8859-1")
	f.Add([]byte("\xff\xfeh\x00i\x00"), "text/plain")
	f.Add([]byte(`<meta charset="x-unknown">abc`), "text/html; charset=\"utf-8-sig\"")
	f.Add([]byte("1f\r\nabc"), "")
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		for _, main := range []bool{false, true} {
			out, _ := payloadText(nil, body, ct, main)
			if !utf8.Valid(out) {
				t.Fatalf("payloadText(%q, %q, main %v) = %q: invalid UTF-8", body, ct, main, out)
			}
		}
		decodeBody(body, "chunked", ct, 1<<16) // content coding from the fuzzer
	})
}

// FuzzAppendJSONString checks the JSON string encoder against
// encoding/json.
func FuzzAppendJSONString(f *testing.F) {
	f.Add("plain \"quoted\" \\ \n\t\x00 \u2028 日本 \xff")
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("AppendJSONString(%q) = %s: %v", s, b, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); utf8.ValidString(s) && back != want {
			t.Fatalf("AppendJSONString(%q) decodes to %q", s, back)
		}
	})
}

func FuzzParquet(f *testing.F) {
	dir := f.TempDir()
	src := writeFile(f, dir, "in.jsonl", []byte(mixedJSONL))
	pq := filepath.Join(dir, "in.parquet")
	w, _ := Create(pq)
	r, _ := Open(src, Options{})
	for r.Next() {
		w.Write(r.Doc())
	}
	r.Close()
	if err := w.Commit(); err != nil {
		f.Fatal(err)
	}
	seed, _ := os.ReadFile(pq)
	f.Add(seed)
	lz := filepath.Join(dir, "lz4raw.parquet") // decoded by decodeLZ4Raw
	writeCodec(f, lz, codecRows(20), &parquet.Lz4Raw, true)
	seed, _ = os.ReadFile(lz)
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDocs(t, NewParquet(bytes.NewReader(data), int64(len(data)), "f.parquet", Options{OnInvalid: skipAll}), "text")
	})
}

// FuzzWriteRead writes one document to JSONL and Parquet and reads it
// back.
func FuzzWriteRead(f *testing.F) {
	f.Add("id-1", "some text", `{"id":"id-1","text":"some text","n":1}`)
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, id, text, raw string) {
		if !utf8.ValidString(text) || !utf8.ValidString(id) {
			return
		}
		doc := &Document{ID: id, Text: text}
		if m := map[string]any{}; json.Unmarshal([]byte(raw), &m) == nil {
			m["id"], m["text"] = id, text
			doc.Raw, _ = json.Marshal(m)
		}
		dir := t.TempDir()
		for _, name := range []string{"o.jsonl", "o.parquet"} {
			p := filepath.Join(dir, name)
			w, err := Create(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(doc); err != nil {
				t.Fatal(err)
			}
			if err := w.Commit(); err != nil {
				t.Fatalf("%s: Commit: %v", name, err)
			}
			got, err := readFile(t, p, Options{})
			if err != nil || len(got) != 1 || got[0].Text != text || (id != "" && got[0].ID != id) {
				t.Fatalf("%s: read back %v, %v; want id %q text %q", name, got, err, id, text)
			}
			if len(doc.Raw) > 0 && !jsonEqual(got[0].Raw, string(doc.Raw)) {
				t.Fatalf("%s: Raw %s, want %s", name, got[0].Raw, doc.Raw)
			}
		}
	})
}

// FuzzObjectMembers checks the JSONL field scanner against encoding/json.
// FuzzScanObject checks the one-pass validating scanner against
// encoding/json: the same verdict on validity, and the same top-level
// member values.
func FuzzScanObject(f *testing.F) {
	f.Add([]byte(`{"id": 1, "text": "a\"b", "x": {"text": "nested"}, "text": "last"}`), "id", "text")
	f.Add([]byte(`{"t\u0065xt": "escaped key", "a": [1, {"b": "]"}], "id": null}`), "id", "text")
	f.Add([]byte(` [ {"text": "in array"} ] `), "id", "text")
	f.Add([]byte(`{"a": -0.5e+3, "b": [true, false, null], "c": "\ud83d\ude00"}`), "a", "c")
	f.Add([]byte(`{"a": 01}`), "a", "b")
	f.Add([]byte(`{"a": "x" "b"}`), "a", "b")
	f.Fuzz(func(t *testing.T, b []byte, k1, k2 string) {
		if !utf8.Valid(b) { // the reader rejects invalid UTF-8 before parsing
			return
		}
		v1, v2, isObject, err := scanObject(b, k1, k2)
		if valid := json.Valid(b); (err == nil) != valid {
			t.Fatalf("scanObject(%q) err = %v, json.Valid = %v", b, err, valid)
		}
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		uerr := json.Unmarshal(b, &m)
		if wantObject := uerr == nil && m != nil; isObject != wantObject {
			t.Fatalf("scanObject(%s) isObject = %v, encoding/json: %v %v", b, isObject, m, uerr)
		}
		if !isObject {
			return
		}
		for _, c := range []struct {
			key string
			got []byte
		}{{k1, v1}, {k2, v2}} {
			want, found := m[c.key]
			if found != (c.got != nil) || (found && !bytes.Equal(bytes.TrimSpace(want), c.got)) {
				t.Fatalf("scanObject(%s)[%q] = %q, encoding/json %q (found %v)", b, c.key, c.got, want, found)
			}
		}
	})
}

// FuzzJSONString checks the string decoder against encoding/json: the same
// verdict and the same text for every quoted literal.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d\ud83d\ude00"`,
		`"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud83d\ud83d\ude00"`, `"bad \x"`, `"\u12"`,
		"\"ctl \x01\"", `"bare " quote"`, "\"\xff\xfe\"", `"trailing \"`, `"\uD83D\uDE00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := jsonString(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		wantOK := err == nil && len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"'
		if ok != wantOK {
			t.Fatalf("jsonString(%q) ok = %v, encoding/json: %q %v", raw, ok, want, err)
		}
		if ok && got != want {
			t.Fatalf("jsonString(%q) = %q, encoding/json %q", raw, got, want)
		}
	})
}

// FuzzParseJSONLShared: ParseJSONLShared (the text shares the record's
// memory) gives the ID, Text and error of ParseJSONL for any record, and
// leaves the record unchanged.
func FuzzParseJSONLShared(f *testing.F) {
	for _, s := range strings.Split(jsonlSample+"\n"+mixedJSONL, "\n") {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"id": 7, "text": "a\u00e9\ud800\"b"}`))
	f.Add([]byte("{\"text\": \"\xff\"}"))
	f.Add([]byte(`{"text": ""}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		orig := bytes.Clone(raw)
		want := Document{Raw: bytes.Clone(raw), Source: "f", Record: 3}
		werr := ParseJSONL(&want, Options{})
		got := Document{Raw: raw, Source: "f", Record: 3}
		gerr := ParseJSONLShared(&got, Options{})
		if got.ID != want.ID || got.Text != want.Text || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: shared (%q, %q, %v), copied (%q, %q, %v)", raw, got.ID, got.Text, gerr, want.ID, want.Text, werr)
		}
		if !bytes.Equal(raw, orig) {
			t.Fatalf("%q changed to %q", orig, raw)
		}
	})
}

// FuzzSplitLines checks JSONL.Lines and SplitLines against Next: reading a
// RawOnly JSONL stream in blocks of lines (split by SplitLines), with Next
// between them, gives the same records, line numbers, offsets and errors
// (too long, damaged stream) as Next alone, for any block size.
func FuzzSplitLines(f *testing.F) {
	f.Add([]byte("{\"text\":\"a\"}\n\n  \t\n{\"text\":\"b\"}\r\n"+strings.Repeat("x", 40)+"\n\r\n{}\n{\"text\":\"last\"}"), uint8(7), uint8(16))
	f.Add([]byte("a\nb\r\n"+strings.Repeat("y", 17)+"\r\n"+strings.Repeat("z", 16)+"\r\n\n"), uint8(1), uint8(16))
	f.Add([]byte("\n\n\n"+strings.Repeat("w", 300)+"\nq\n"), uint8(255), uint8(0))
	f.Add(compressFor(f, "x.zst", []byte(jsonlSample+"\r\n\n"+strings.Repeat("v", 50)+"\n"+jsonlSample)), uint8(20), uint8(32))
	f.Add(append(compressFor(f, "x.gz", []byte(jsonlSample)), "garbage"...), uint8(3), uint8(64))
	f.Fuzz(func(t *testing.T, data []byte, block, maxDoc uint8) {
		type rec struct {
			raw          string
			line, offset int64
			err          string
		}
		read := func(blocks bool) []rec {
			var got []rec
			opts := Options{RawOnly: true, MaxDocBytes: int(maxDoc), OnInvalid: func(e *RecordError) error {
				got = append(got, rec{line: e.Record, offset: e.Offset, err: e.Error()})
				return nil
			}}
			r := NewJSONL(newDecoder(io.NopCloser(bytes.NewReader(data)), compSniff), "f", opts)
			var buf []byte
			for {
				for blocks {
					var line, off int64
					var ok bool
					if buf, line, off, ok = r.Lines(buf[:0], int(block)); !ok {
						break
					}
					if len(buf) == 0 || buf[len(buf)-1] != '\n' {
						t.Fatalf("block %q does not end a line", buf)
					}
					SplitLines(buf, "f", line, off, opts, func(lo, hi int, line, off int64, err *RecordError) error {
						if err != nil {
							// Next reports it after looking ahead for damage:
							// compare the record's error only.
							got = append(got, rec{line: line, offset: off, err: err.Error()})
							return nil
						}
						got = append(got, rec{raw: string(buf[lo:hi]), line: line, offset: off})
						return nil
					})
				}
				if !r.Next() {
					break
				}
				d := r.Doc()
				got = append(got, rec{raw: string(d.Raw), line: d.Record, offset: d.Offset})
			}
			if r.Err() != nil {
				got = append(got, rec{err: r.Err().Error()})
			}
			return got
		}
		want, got := read(false), read(true)
		// A record too long is reported by Next as damage when the stream
		// turns out damaged soon after it; SplitLines leaves that to its
		// caller (package dedup's collector). Such runs are not compared.
		for _, x := range want {
			if strings.Contains(x.err, "checking the stream ahead") {
				return
			}
		}
		if len(got) != len(want) {
			t.Fatalf("blocks of %d: %d records, want %d\ngot  %+v\nwant %+v", block, len(got), len(want), got, want)
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("blocks of %d: record %d is %+v, want %+v", block, k, got[k], want[k])
			}
		}
	})
}
