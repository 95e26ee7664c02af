package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// warcRecord builds a WARC record; headers are "Name: value" lines, and
// Content-Length is added unless noLength.
func warcRecord(version string, headers []string, block string, noLength bool) string {
	var b strings.Builder
	b.WriteString(version + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if !noLength {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(block))
	}
	b.WriteString("\r\n" + block + "\r\n\r\n")
	return b.String()
}

func response(uri, httpHeaders, body string) string {
	return warcRecord("WARC/1.0", []string{
		"WARC-Type: response",
		"WARC-Target-URI: " + uri,
		"WARC-Date: 2024-01-02T03:04:05Z",
		"WARC-Record-ID: <urn:uuid:" + uri + ">",
		"Content-Type: application/http; msgtype=response",
	}, "HTTP/1.1 200 OK\r\n"+httpHeaders+"\r\n"+body, false)
}

// arcRecord builds an ARC v1 record.
func arcRecord(url, ct, block string) string {
	return fmt.Sprintf("%s 127.0.0.1 20080509190241 %s %d\n%s\n", url, ct, len(block), block)
}

const arcFiledesc = "filedesc://test.arc 0.0.0.0 20080619093439 text/plain 73\n1 0 CommonCrawl\nURL IP-address Archive-date Content-type Archive-length\n\n"

func gzipMembers(records ...string) string {
	var b bytes.Buffer
	for _, r := range records {
		w := gzip.NewWriter(&b)
		w.Write([]byte(r))
		w.Close()
	}
	return b.String()
}

func TestWARC(t *testing.T) {
	warcinfo := warcRecord("WARC/1.0", []string{"WARC-Type: warcinfo", "Content-Type: application/warc-fields"}, "software: test\r\n", false)
	html := "<html><head><title>T</title><style>p{}</style></head><body><p>Hello <b>world</b></p><script>x()</script></body></html>"
	for _, tc := range []struct {
		name  string
		input string
		opts  Options
		want  []string // "ID|TEXT"
	}{
		{
			name:  "warc-1.0",
			input: warcinfo + response("http://a/", "Content-Type: text/html\r\n", html) + response("http://b/", "Content-Type: text/plain\r\n", "plain text"),
			want:  []string{"http://a/|Hello world", "http://b/|plain text"},
		},
		{
			name: "warc-0.18-lf-odd-headers",
			input: "WARC/0.18\nwarc-type:response\nWARC-Target-URI:   <http://c/>  \nX-Odd-Header\nWARC-Date: 2009-03-65T08:43:19-0800\ncontent-length: " +
				fmt.Sprint(len("HTTP/1.0 200 OK\nContent-Type: text/html\n\n<p>old</p>")) + "\n\nHTTP/1.0 200 OK\nContent-Type: text/html\n\n<p>old</p>\n\n",
			want: []string{"http://c/|old"},
		},
		{
			name: "resource-and-conversion-no-http",
			input: warcRecord("WARC/1.1", []string{"WARC-Type: resource", "WARC-Target-URI: file:///x.txt", "Content-Type: text/plain; charset=utf-8"}, "resource text", false) +
				warcRecord("WARC/1.0", []string{"WARC-Type: conversion", "WARC-Target-URI: http://d/", "Content-Type: text/plain"}, "converted text", false),
			want: []string{"file:///x.txt|resource text", "http://d/|converted text"},
		},
		{
			name: "skipped-records",
			input: warcRecord("WARC/1.0", []string{"WARC-Type: request", "WARC-Target-URI: http://e/"}, "GET / HTTP/1.1\r\n\r\n", false) +
				warcRecord("WARC/1.0", []string{"WARC-Type: metadata", "WARC-Target-URI: http://e/"}, "via: x\r\n", false) +
				response("http://img/", "Content-Type: image/png\r\n", "\x89PNG\r\n\x1a\n\x00\x00") +
				response("http://empty/", "Content-Type: text/html\r\n", "") +
				response("http://f/", "Content-Type: text/html\r\n", "<p>kept</p>"),
			want: []string{"http://f/|kept"},
		},
		{
			name:  "charset-header",
			input: response("http://latin1/", "Content-Type: text/html; charset=ISO-8859-1\r\n", "<p>caf\xe9 na\xefve</p>"),
			want:  []string{"http://latin1/|café naïve"},
		},
		{
			name:  "charset-meta",
			input: response("http://cp1251/", "Content-Type: text/html\r\n", `<meta charset="windows-1251"><p>`+"\xcf\xf0\xe8\xe2\xe5\xf2</p>"),
			want:  []string{"http://cp1251/|Привет"},
		},
		{
			name:  "charset-gbk",
			input: response("http://gbk/", "Content-Type: text/html; charset=gbk\r\n", "<p>\xd6\xd0\xce\xc4</p>"),
			want:  []string{"http://gbk/|中文"},
		},
		{
			name:  "invalid-utf8-no-charset",
			input: response("http://bad/", "Content-Type: text/plain; charset=utf-8\r\n", "ok \xff\xfe bytes"),
			want:  []string{"http://bad/|ok \uFFFD bytes"},
		},
		{
			name:  "utf8-bom",
			input: response("http://bom/", "Content-Type: text/plain\r\n", "\xef\xbb\xbfbom text"),
			want:  []string{"http://bom/|bom text"},
		},
		{
			name:  "chunked-gzip",
			input: response("http://gz/", "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n", chunked(gzipMembers("<p>zipped</p>"))),
			want:  []string{"http://gz/|zipped"},
		},
		{
			name:  "stale-encoding-headers",
			input: response("http://stale/", "Content-Type: text/html\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n", "<p>already decoded</p>"),
			want:  []string{"http://stale/|already decoded"},
		},
		{
			name:  "id-header",
			input: warcRecord("WARC/1.0", []string{"WARC-Type: response", "WARC-Target-URI: http://g/", "WARC-TREC-ID: clueweb-1", "Content-Type: text/plain"}, "trec", false),
			opts:  Options{IDField: "WARC-TREC-ID"},
			want:  []string{"clueweb-1|trec"},
		},
		{
			name:  "no-uri",
			input: warcRecord("WARC/1.0", []string{"WARC-Type: resource", "Content-Type: text/plain"}, "anonymous", false),
			want:  []string{"in.warc:1|anonymous"},
		},
		{
			name:  "gzip-per-record",
			input: gzipMembers(warcinfo, response("http://a/", "Content-Type: text/plain\r\n", "one"), response("http://b/", "Content-Type: text/plain\r\n", "two")),
			want:  []string{"http://a/|one", "http://b/|two"},
		},
		{
			name:  "arc-v1",
			input: arcFiledesc + arcRecord("http://h/", "text/html", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<p>arc page</p>") + arcRecord("http://h/doc.pdf", "application/pdf", "%PDF-1.4 ...") + arcRecord("http://i/", "text/plain", "no envelope"),
			want:  []string{"http://h/|arc page", "http://i/|no envelope"},
		},
		{
			name:  "arc-v2",
			input: "http://j/ 127.0.0.1 20080509190241 text/plain 200 - - 0 x.arc 5\nhello\n",
			want:  []string{"http://j/|hello"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewWARC(newDecoder(nopCloser(tc.input), compSniff), "in.warc", tc.opts)
			docs, err := readAll(r)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, d.ID+"|"+d.Text)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// chunked encodes s in chunked transfer coding, in chunks of 7 bytes.
func chunked(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		n := min(7, len(s))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, s[:n])
		s = s[n:]
	}
	return b.String() + "0\r\n\r\n"
}

func TestWARCRaw(t *testing.T) {
	in := response("http://a/x?q=\"1\"", "Content-Type: text/html; charset=utf-8\r\n", "<p>Hi</p>")
	docs, err := readAll(NewWARC(nopCloser(in), "f.warc", Options{}))
	want := `{"id":"http://a/x?q=\"1\"","url":"http://a/x?q=\"1\"","date":"2024-01-02T03:04:05Z","content_type":"text/html","text":"Hi"}`
	if err != nil || len(docs) != 1 || docs[0].Raw != want {
		t.Fatalf("got %v, %v\nwant Raw %s", docs, err, want)
	}
	docs, _ = readAll(NewWARC(nopCloser(arcFiledesc+arcRecord("http://h/", "text/plain", "x")), "f.arc", Options{IDField: "key", TextField: "body"}))
	want = `{"key":"http://h/","url":"http://h/","date":"2008-05-09T19:02:41Z","content_type":"text/plain","body":"x"}`
	if len(docs) != 1 || docs[0].Raw != want || docs[0].Record != 2 {
		t.Errorf("ARC: got %v\nwant Raw %s, record 2", docs, want)
	}
}

func TestWARCMalformed(t *testing.T) {
	good1 := response("http://1/", "Content-Type: text/plain\r\n", "one")
	good2 := response("http://2/", "Content-Type: text/plain\r\n", "two")
	noLen := warcRecord("WARC/1.0", []string{"WARC-Type: response", "WARC-Target-URI: http://nolen/"}, "HTTP/1.1 200 OK\r\n\r\nlost", true)
	badLen := warcRecord("WARC/1.0", []string{"WARC-Type: response", "Content-Length: 12x"}, "lost", true)
	for _, tc := range []struct {
		name      string
		input     string
		want      error
		offset    int64
		record    int64
		afterSkip []string // ids read when skipping
	}{
		{"missing-length", good1 + noLen + good2, ErrMalformed, int64(len(good1)), 2, []string{"http://1/", "http://2/"}},
		{"invalid-length", good1 + badLen + good2, ErrMalformed, int64(len(good1)), 2, []string{"http://1/", "http://2/"}},
		{"garbage", good1 + "this is not a record\r\nnor this\r\n" + good2, ErrMalformed, int64(len(good1)), 2, []string{"http://1/", "http://2/"}},
		{"truncated-block", good1 + good2[:len(good2)-10], ErrCorrupt, int64(len(good1)), 2, []string{"http://1/"}},
		{"truncated-header", good1 + "WARC/1.0\r\nWARC-Type: resp", ErrCorrupt, int64(len(good1)), 2, []string{"http://1/"}},
		{"long-line", good1 + "WARC/1.0\r\nX: " + strings.Repeat("x", 300<<10) + "\r\n\r\n" + good2, ErrMalformed, int64(len(good1)), 2, []string{"http://1/", "http://2/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := readAll(NewWARC(nopCloser(tc.input), "m.warc", Options{}))
			var re *RecordError
			if !errors.As(err, &re) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want a RecordError wrapping %v", err, tc.want)
			}
			if re.File != "m.warc" || re.Offset != tc.offset || re.Record != tc.record {
				t.Errorf("error at %s record %d offset %d, want m.warc record %d offset %d", re.File, re.Record, re.Offset, tc.record, tc.offset)
			}
			if len(docs) != 1 || docs[0].ID != "http://1/" {
				t.Errorf("before the error read %v, want http://1/", docs)
			}
			var reported int
			docs, err = readAll(NewWARC(nopCloser(tc.input), "m.warc", Options{OnInvalid: func(*RecordError) error { reported++; return nil }}))
			var ids []string
			for _, d := range docs {
				ids = append(ids, d.ID)
			}
			if err != nil || fmt.Sprint(ids) != fmt.Sprint(tc.afterSkip) || reported != 1 {
				t.Errorf("skipping: read %v, %v, %d reports; want %v, nil, 1 report", ids, err, reported, tc.afterSkip)
			}
		})
	}
}

func TestWARCTooLarge(t *testing.T) {
	big := response("http://big/", "Content-Type: text/plain\r\n", strings.Repeat("x", 5000))
	small := response("http://small/", "Content-Type: text/plain\r\n", "s")
	var reported []error
	docs, err := readAll(NewWARC(nopCloser(big+small), "t.warc", Options{MaxDocBytes: 1000, OnInvalid: func(e *RecordError) error { reported = append(reported, e); return nil }}))
	if err != nil || len(docs) != 1 || docs[0].ID != "http://small/" || len(reported) != 1 || !errors.Is(reported[0], ErrTooLarge) {
		t.Errorf("got %v, %v, reported %v; want only http://small/ and one ErrTooLarge", docs, err, reported)
	}
}

// sampleDir holds real archives (research-only data, not in the repository).
const sampleDir = "../../shared/data/warc-samples"

func TestWARCSamples(t *testing.T) {
	if _, err := os.Stat(sampleDir); err != nil {
		t.Skip("no sample archives at", sampleDir)
	}
	for _, tc := range []struct {
		file    string
		docs    int
		records int64 // number of the last document's record
	}{
		{"cc-arc-2008-small-sample-1213893279526_0.arc", 138, 146}, // 139 HTML (one empty 302) and 6 PDF after filedesc
		{"cc-arc-2010-small-sample-1262850551027_8.arc", 8, 9},
		{"clueweb09-en0000-00.warc.gz", 23, 24},
		{"clueweb12-0000tw-00.warc.gz", 3, 4},
		{"wayback-topic-1--20201003083220753-00000.warc.gz", 232, 239}, // 6 empty responses
		{"wayback-snapshot-topic-02.warc.gz", 128, 129},
	} {
		t.Run(tc.file, func(t *testing.T) {
			if st, err := os.Stat(filepath.Join(sampleDir, tc.file)); err == nil && raceEnabled && st.Size() > 1<<20 {
				t.Skip("large file; read without -race")
			}
			r, err := Open(filepath.Join(sampleDir, tc.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			n, last, empty, bad := 0, int64(0), 0, 0
			for r.Next() {
				d := r.Doc()
				n++
				last = d.Record
				if strings.TrimSpace(d.Text) == "" {
					empty++
				}
				if !strings.Contains(d.ID, "://") {
					t.Errorf("record %d: id %q is not a URL", d.Record, d.ID)
				}
				if strings.Contains(d.Text, "Ã©") || strings.Contains(d.Text, "â€™") {
					bad++
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if n != tc.docs || last != tc.records {
				t.Errorf("%d documents, last record %d; want %d, %d", n, last, tc.docs, tc.records)
			}
			if empty > n/10 || bad > 0 {
				t.Errorf("%d documents with empty text, %d badly decoded", empty, bad)
			}
		})
	}
	// The two ClueWeb09 files are byte-identical: same documents.
	a, errA := readFile(t, filepath.Join(sampleDir, "clueweb09-en0000-00.warc.gz"), Options{IDField: "WARC-TREC-ID"})
	b, errB := readFile(t, filepath.Join(sampleDir, "clueweb09-en0001-00.warc.gz"), Options{IDField: "WARC-TREC-ID"})
	if errA != nil || errB != nil || fmt.Sprint(a) != fmt.Sprint(b) || !strings.HasPrefix(a[0].ID, "clueweb09-en0000-00-") {
		t.Errorf("ClueWeb09 copies differ or lack TREC ids: %v %v", errA, errB)
	}
}

// TestWARCSamplesMainContent reads the sample archives with and without
// Options.HTMLMain: the same documents, the text of other payloads (the
// CDX listings of the wayback-topic-1 file) unchanged, each page's main
// content made of words of its whole visible text and, over all pages,
// shorter; on a
// ClueWeb12 blog page the template (tag cloud, credits) is gone and the
// post and its title heading stay.
func TestWARCSamplesMainContent(t *testing.T) {
	if _, err := os.Stat(sampleDir); err != nil {
		t.Skip("no sample archives at", sampleDir)
	}
	files := []string{"cc-arc-2010-small-sample-1262850551027_8.arc", "clueweb09-en0000-00.warc.gz", "clueweb12-0000tw-00.warc.gz", "wayback-topic-1--20201003083220753-00000.warc.gz"}
	if !raceEnabled {
		files = append(files, "cc-arc-2008-small-sample-1213893279526_0.arc", "wayback-snapshot-topic-02.warc.gz")
	}
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			whole, err := readFile(t, filepath.Join(sampleDir, file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			main, err := readFile(t, filepath.Join(sampleDir, file), Options{HTMLMain: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(main) != len(whole) {
				t.Fatalf("%d documents with HTMLMain, %d without", len(main), len(whole))
			}
			pages, wholeBytes, mainBytes, shorter := 0, 0, 0, 0
			for i := range main {
				w, m := whole[i], main[i]
				if m.ID != w.ID || m.Record != w.Record {
					t.Fatalf("document %d: %s (record %d) with HTMLMain, %s (record %d) without", i, m.ID, m.Record, w.ID, w.Record)
				}
				if !strings.Contains(w.Raw, `"content_type":"text/html"`) {
					if m.Text != w.Text {
						t.Errorf("%s: not HTML, but its text changed with HTMLMain", m.ID)
					}
					continue
				}
				pages++
				words := make(map[string]bool)
				for _, f := range strings.Fields(w.Text) {
					words[f] = true
				}
				for _, f := range strings.Fields(m.Text) {
					if !words[f] {
						t.Errorf("%s: main content word %q is not in the whole text", m.ID, f)
						break
					}
				}
				wholeBytes += len(w.Text)
				mainBytes += len(m.Text)
				if len(m.Text) < len(w.Text) {
					shorter++
				}
			}
			t.Logf("%d documents, %d HTML pages, %d with a shorter main content; %d bytes of main content, %d of whole text", len(main), pages, shorter, mainBytes, wholeBytes)
			if pages > 0 && (shorter*2 < pages || mainBytes >= wholeBytes) {
				t.Errorf("%d of %d pages shorter, %d bytes against %d: the template was not removed", shorter, pages, mainBytes, wholeBytes)
			}
		})
	}
	docs, err := readFile(t, filepath.Join(sampleDir, "clueweb12-0000tw-00.warc.gz"), Options{HTMLMain: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.ID == "http://tsawer.net/2012/02/10/le-manoir-derriere-le-palmier/" {
			if !strings.Contains(d.Text, "bleumarie has added a photo to the pool") || !strings.Contains(d.Text, "Le manoir derrière le palmier") || strings.Contains(d.Text, "Powered by WordPress") || strings.Contains(d.Text, "Tags cloud") {
				t.Errorf("%s: main content %q", d.ID, d.Text)
			}
			return
		}
	}
	t.Error("no tsawer.net page in the ClueWeb12 sample")
}
