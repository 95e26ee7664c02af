package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
	"weak"

	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// refDoc and refBatch decode with encoding/json the way the server did
// before the fast path (and still does when it gives up).
func refDoc(b []byte) (docRequest, error) {
	var req docRequest
	err := decodeFrom(bytes.NewReader(b), &req)
	return req, err
}

func refBatch(b []byte) (batchRequest, error) {
	var req batchRequest
	err := decodeFrom(bytes.NewReader(b), &req)
	return req, err
}

var fastSeeds = []string{
	`{"id":"a","text":"hello world","limit":3}`,
	` { "text" : "hello\n\"world\" \u00e9\u4e2d\\/" , "ID": null, "id": "x" } `,
	`{"text":"caf\u00e9 ☕ 中文","limit":-0}`,
	`{"text":"a","limit":01}`,
	`{"text":"a","limit":1.5}`,
	`{"text":"a","limit":1e3}`,
	`{"text":"a","limit":12345678901}`,
	`{"text":"\ud83d\ude00"}`,
	`{"text":"\ud800"}`,
	`{"text":"bad \x"}`,
	"{\"text\":\"ctl \x01\"}",
	"{\"text\":\"invalid \xff utf8\"}",
	`{"text":"a","other":1}`,
	`{"Text":"a","TEXT":"b"}`,
	`{"text":"a"} {}`,
	`{"text":"a",}`,
	`{}`,
	`{"text":nullx}`,
	`{"documents":[{"id":"a","text":"x"},{"id":"b","text":"y"}],"limit":2}`,
	`{"documents":[],"limit":null}`,
	`{"documents":null}`,
	`{"documents":[null]}`,
	`{"documents":[{"id":"a","text":"x","limit":1}]}`,
	`{"documents":[{"id":"a","text":"x"}]`,
	`[]`,
	`"text"`,
}

// FuzzFastDecode is the differential test of the fast request decoder:
// whatever it accepts, encoding/json accepts with the same result.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d docRequest
		if fastDoc(b, &d) {
			want, err := refDoc(b)
			if err != nil {
				t.Fatalf("fast path accepts %q, encoding/json: %v", b, err)
			}
			if !reflect.DeepEqual(d, want) {
				t.Fatalf("%q: fast path %s, encoding/json %s", b, showDoc(d), showDoc(want))
			}
		}
		var r batchRequest
		if fastBatch(b, &r) {
			want, err := refBatch(b)
			if err != nil {
				t.Fatalf("fast path accepts batch %q, encoding/json: %v", b, err)
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("batch %q: fast path %+v, encoding/json %+v", b, r, want)
			}
		}
	})
}

func showDoc(d docRequest) string {
	p := func(s *string) string {
		if s == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", *s)
	}
	l := "nil"
	if d.Limit != nil {
		l = fmt.Sprint(*d.Limit)
	}
	return fmt.Sprintf("{id %s text %s limit %s}", p(d.ID), p(d.Text), l)
}

// TestFastDecodeTakesCommonShapes checks that the bodies clients send
// (encoding/json's own output, with HTML escapes and non-ASCII text) take
// the fast path, so that it is not silently always falling back.
func TestFastDecodeTakesCommonShapes(t *testing.T) {
	lim := 5
	for _, text := range []string{"plain words", "<b>tag</b> & \"quotes\" \\ \n\t", "中文 é ☕ \u2028", strings.Repeat("long text ", 200)} {
		id := "doc-1"
		b, _ := json.Marshal(docRequest{docIn: docIn{ID: &id, Text: &text}, Limit: &lim})
		var d docRequest
		if !fastDoc(b, &d) {
			t.Errorf("fast path refused %s", b)
			continue
		}
		if *d.Text != text || *d.ID != id || *d.Limit != lim {
			t.Errorf("fast path decoded %s as %s", b, showDoc(d))
		}
		docs := []docIn{{ID: &id, Text: &text}, {ID: &id, Text: &text}}
		b, _ = json.Marshal(batchRequest{Documents: &docs, Limit: &lim})
		var r batchRequest
		if !fastBatch(b, &r) || len(*r.Documents) != 2 || *(*r.Documents)[1].Text != text {
			t.Errorf("fast path refused or misread batch %s", b)
		}
	}
	// And each seed either takes the fast path with encoding/json's result
	// or is refused (the fuzz target's property, on the seeds).
	for _, s := range fastSeeds {
		var d docRequest
		if fastDoc([]byte(s), &d) {
			if want, err := refDoc([]byte(s)); err != nil || !reflect.DeepEqual(d, want) {
				t.Errorf("%s: fast %s, reference %s, %v", s, showDoc(d), showDoc(want), err)
			}
		}
	}
}

// BenchmarkDecodeDoc compares the fast path with encoding/json on a 1 KB
// document.
func BenchmarkDecodeDoc(b *testing.B) {
	id, text := "doc-123456", strings.Repeat("lorem ipsum dolor ", 57)
	body, _ := json.Marshal(docIn{ID: &id, Text: &text})
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		var d docRequest
		for b.Loop() {
			if !fastDoc(body, &d) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := refDoc(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCheckAndAddHandler measures the server's own work per
// check-and-add request (routing, decoding, sketching, the store without
// syncs, the response), without the network.
func BenchmarkCheckAndAddHandler(b *testing.B) {
	st, err := store.Create(b.TempDir(), sketch.Default(sketch.MinHash), store.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := New(st, Config{})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	r := rand.New(rand.NewPCG(1, 2))
	bodies := make([][]byte, 4096)
	for i := range bodies {
		var sb strings.Builder
		for sb.Len() < 1000 {
			fmt.Fprintf(&sb, "w%d ", r.IntN(50000))
		}
		id, text := fmt.Sprint("doc-", i), sb.String()
		bodies[i], _ = json.Marshal(docIn{ID: &id, Text: &text})
	}
	rec := httptest.NewRecorder()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req := httptest.NewRequest("POST", "/v1/check-and-add", bytes.NewReader(bodies[i%len(bodies)]))
		rec.Body.Reset()
		h.ServeHTTP(rec, req)
		i++
	}
}

// FuzzCheckStrings checks that checkStrings never panics, that what the
// fast path accepts it accepts too, and that a body it accepts decodes
// without any U+FFFD that the body did not spell out.
func FuzzCheckStrings(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","text":"b"}`, "{\"id\":\"a\xff\",\"text\":\"b\"}", `{"text":"\ud800"}`,
		`{"text":"\ud83d\ude00"}`, `{"documents":[{"id":"x","text":"\udc00"}]}`, `{"ids":["a","\\ud800"]}`,
		`{"te\u0078t":"\ufffd"}`, `["\ud800\u0041"]`, `{"a":{"b":[1,"\ud800"]}}`, "\"\xed\xa0\x80\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkStrings(b)
		var req docRequest
		if fastDoc(b, &req) && err != nil {
			t.Fatalf("the fast path accepts %q, checkStrings refuses it: %v", b, err)
		}
		var v any
		if err != nil || json.Unmarshal(b, &v) != nil {
			return
		}
		spelled := bytes.Contains(b, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(b), []byte(`\ufffd`))
		if !spelled && containsFFFD(v) {
			t.Fatalf("checkStrings accepts %q, which decodes with U+FFFD", b)
		}
	})
}

func containsFFFD(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, utf8.RuneError)
	case []any:
		for _, e := range v {
			if containsFFFD(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, utf8.RuneError) || containsFFFD(e) {
				return true
			}
		}
	}
	return false
}

// TestBodyLetGo checks that the body wrap reads before a request takes its
// slot is not kept by the request's context once the handler has taken and
// decoded it: a batch's body would otherwise stay in memory while its
// documents are sketched and queried (from d3c5127 to 03fa6dc, 31 MiB more
// for each request of TestServeFlood).
func TestBodyLetGo(t *testing.T) {
	_, srv := newServer(t, sketch.MinHash, Config{})
	var served, kept bool
	h := srv.wrap("test", func(w http.ResponseWriter, r *http.Request) error {
		buf, err := readBody(r)
		if err != nil {
			return err
		}
		body := weak.Make(buf)
		putBody(buf) // too large for the pool: only the request could keep it
		runtime.GC()
		served, kept = true, body.Value() != nil
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest("POST", "/v1/check", strings.NewReader(strings.Repeat("x", 2*maxPooledBody))))
	if !served {
		t.Fatalf("the handler did not run: %d %s", rec.Code, rec.Body)
	}
	if kept {
		t.Error("the request still refers to its body once the handler has read it")
	}
}

// TestSlowBodyIsTimeout checks that a body cut off by the connection's
// read deadline (the http.Server's ReadTimeout, which neardup serve sets
// to --timeout) is answered 408 naming --timeout, not 400 with the
// socket's addresses (a client too slow, not a malformed request), for a
// body of declared length and for one sent in chunks.
func TestSlowBodyIsTimeout(t *testing.T) {
	st, srv := newServer(t, sketch.MinHash, Config{})
	for _, declared := range []bool{true, false} {
		body := io.MultiReader(strings.NewReader(`{"id":"a","text":"the quick brown`), errReader{os.ErrDeadlineExceeded})
		req := httptest.NewRequest("POST", "/v1/check-and-add", body)
		if declared {
			req.ContentLength = 1000
		} else {
			req.ContentLength = -1
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusRequestTimeout || !strings.Contains(rec.Body.String(), "--timeout") {
			t.Errorf("declared length %v: %d %s, want 408 naming --timeout", declared, rec.Code, rec.Body)
		}
	}
	if st.Len() != 0 {
		t.Errorf("%d documents in the index, want 0", st.Len())
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
