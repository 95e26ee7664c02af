package corpus

import (
	"bytes"
	"compress/gzip"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fixturePages are served to wget; each maps a path to its content type
// and body, and the text the reader must extract from it.
var fixturePages = []struct {
	path, contentType, body, text string
	gzip                          bool
}{
	{"/index.html", "text/html; charset=utf-8", `<html><head><title>Index</title></head><body><h1>Welcome</h1><p>Links: <a href="/latin1.html">latin1</a> <a href="/meta.html">meta</a> <a href="/big.html">big</a> <a href="/notes.txt">notes</a> <a href="/gz.html">gz</a> <a href="/logo.png">logo</a></p></body></html>`, "Welcome\nLinks: latin1 meta big notes gz logo", false},
	{"/latin1.html", "text/html; charset=iso-8859-1", "<p>Caf\xe9 cr\xe8me br\xfbl\xe9e</p>", "Café crème brûlée", false},
	{"/meta.html", "text/html", `<html><head><meta http-equiv="Content-Type" content="text/html; charset=shift_jis"></head><body><p>` + "\x93\xfa\x96\x7b\x8c\xea" + `</p></body></html>`, "日本語", false},
	{"/big.html", "text/html; charset=utf-8", "<p>" + strings.Repeat("chunked body words ", 400) + "</p>", strings.TrimSpace(strings.Repeat("chunked body words ", 400)), false},
	{"/notes.txt", "text/plain; charset=utf-8", "plain notes\nsecond line\n", "plain notes\nsecond line\n", false},
	{"/gz.html", "text/html; charset=utf-8", "<p>compressed on the wire</p>", "compressed on the wire", true},
	{"/logo.png", "image/png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "", false},
}

// fixtureHandler serves fixturePages. Go's server sends bodies over 2 KiB
// with chunked transfer coding.
func fixtureHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range fixturePages {
			if p.path != r.URL.Path {
				continue
			}
			w.Header().Set("Content-Type", p.contentType)
			if p.gzip {
				var b bytes.Buffer
				zw := gzip.NewWriter(&b)
				zw.Write([]byte(p.body))
				zw.Close()
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(b.Bytes())
				return
			}
			if len(p.body) > 2048 { // force chunked coding
				w.Write([]byte(p.body[:100]))
				w.(http.Flusher).Flush()
				w.Write([]byte(p.body[100:]))
				return
			}
			w.Write([]byte(p.body))
			return
		}
		http.NotFound(w, r)
	})
}

// checkFixtureDocs checks the documents read from a WARC that wget made
// of fixturePages served at base.
func checkFixtureDocs(t *testing.T, warc string, base string) {
	t.Helper()
	docs, err := readFile(t, warc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range docs {
		got[strings.TrimPrefix(d.ID, base)] = d.Text
	}
	var wantPaths []string
	for _, p := range fixturePages {
		if p.text == "" {
			if _, ok := got[p.path]; ok {
				t.Errorf("%s: a document was made of a %s payload", p.path, p.contentType)
			}
			continue
		}
		wantPaths = append(wantPaths, p.path)
		if got[p.path] != p.text {
			t.Errorf("%s: text %.80q, want %.80q", p.path, got[p.path], p.text)
		}
	}
	var gotPaths []string
	for p := range got {
		gotPaths = append(gotPaths, p)
	}
	sort.Strings(gotPaths)
	sort.Strings(wantPaths)
	if strings.Join(gotPaths, " ") != strings.Join(wantPaths, " ") {
		t.Errorf("documents for %v, want %v", gotPaths, wantPaths)
	}
}

var writeFixture = flag.Bool("write-fixture", false, "rewrite testdata/wget.warc.gz with wget (see scripts/warc-fixture.sh)")

// fixtureAddr is where the server listens when the fixture is rewritten,
// so that the URLs in it are stable.
const fixtureAddr = "127.0.0.1:18321"

// TestWgetWARC makes a WARC with wget against a local server and reads it.
func TestWgetWARC(t *testing.T) {
	wget, err := exec.LookPath("wget")
	if err != nil {
		if *writeFixture {
			t.Fatal("-write-fixture needs wget")
		}
		t.Skip("wget not installed")
	}
	srv := httptest.NewUnstartedServer(fixtureHandler()) // listens on 127.0.0.1
	if *writeFixture {
		l, err := net.Listen("tcp", fixtureAddr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	defer srv.Close()
	dir := t.TempDir()
	for _, compressed := range []bool{true, false} {
		args := []string{"-q", "-r", "-l", "1", "--no-host-directories", "-e", "robots=off",
			"--compression=auto", "--warc-file=" + filepath.Join(dir, "crawl"), "--no-warc-keep-log",
			"-P", filepath.Join(dir, "files"), srv.URL + "/index.html"}
		name := "crawl.warc.gz"
		if !compressed {
			args = append([]string{"--no-warc-compression"}, args...)
			name = "crawl.warc"
		}
		out, err := exec.Command(wget, args...).CombinedOutput()
		if err != nil {
			t.Logf("wget: %v\n%s", err, out) // 404s (favicon, robots) make wget exit 8
		}
		t.Run(name, func(t *testing.T) { checkFixtureDocs(t, filepath.Join(dir, name), srv.URL) })
		if *writeFixture && compressed {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile("testdata/wget.warc.gz", b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWgetFixture reads the committed WARC that scripts/warc-fixture.sh
// made with wget, so that the test runs without wget.
func TestWgetFixture(t *testing.T) {
	checkFixtureDocs(t, "testdata/wget.warc.gz", "http://127.0.0.1:18321")
}
