package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

func newTest(t testing.TB, m sketch.Method, cfg Config) (*store.Store, *httptest.Server) {
	t.Helper()
	st, srv := newServer(t, m, cfg)
	ts := httptest.NewServer(srv.Handler()) // listens on 127.0.0.1
	t.Cleanup(ts.Close)                     // before the store's Close
	return st, ts
}

// newServer returns a Server with cfg on a new index for m in a temporary
// directory, closed when the test ends.
func newServer(t testing.TB, m sketch.Method, cfg Config) (*store.Store, *Server) {
	t.Helper()
	st, err := store.Create(t.TempDir(), sketch.Default(m), store.Options{CacheSize: 4 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st, srv
}

func do(t testing.TB, ts *httptest.Server, method, path, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: response %q is not JSON: %v", method, path, b, err)
		}
	} else {
		v = map[string]any{"raw": string(b)}
	}
	return resp.StatusCode, v
}

const foxText = "The quick brown fox jumps over the lazy dog near the river bank at dawn every single day"

func TestAPI(t *testing.T) {
	st, ts := newTest(t, sketch.MinHash, Config{})
	code, v := do(t, ts, "GET", "/healthz", "")
	if code != 200 || v["status"] != "ok" {
		t.Fatalf("healthz = %d %v", code, v)
	}
	code, v = do(t, ts, "POST", "/v1/check", `{"text":"`+foxText+`"}`)
	if code != 200 || v["duplicate"] != false || len(v["matches"].([]any)) != 0 {
		t.Fatalf("check on empty index = %d %v", code, v)
	}
	code, v = do(t, ts, "POST", "/v1/check-and-add", `{"id":"fox","text":"`+foxText+`"}`)
	if code != 201 || v["added"] != true || v["duplicate"] != false {
		t.Fatalf("check-and-add = %d %v", code, v)
	}
	// A retry of an acknowledged check-and-add is a duplicate of itself.
	code, v = do(t, ts, "POST", "/v1/check-and-add", `{"id":"fox","text":"`+foxText+`"}`)
	if code != 200 || v["added"] != false || v["matches"].([]any)[0].(map[string]any)["id"] != "fox" {
		t.Fatalf("retried check-and-add = %d %v", code, v)
	}
	code, v = do(t, ts, "POST", "/v1/check-and-add", `{"id":"fox2","text":"`+strings.ToUpper(foxText)+`!"}`)
	if code != 200 || v["added"] != false || v["duplicate"] != true {
		t.Fatalf("check-and-add of a duplicate = %d %v", code, v)
	}
	m := v["matches"].([]any)[0].(map[string]any)
	if m["id"] != "fox" || m["similarity"].(float64) != 1 || m["distance"].(float64) != -1 {
		t.Errorf("match = %v", m)
	}
	code, v = do(t, ts, "POST", "/v1/check", `{"text":"`+foxText+` and more"}`)
	if code != 200 || v["duplicate"] != true {
		t.Fatalf("check of a near-duplicate = %d %v", code, v)
	}
	code, v = do(t, ts, "POST", "/v1/add", `{"id":"fox2","text":"`+foxText+`"}`)
	if code != 201 || v["added"] != true {
		t.Fatalf("add = %d %v", code, v)
	}
	code, v = do(t, ts, "POST", "/v1/add", `{"id":"fox2","text":"other"}`)
	if code != 409 || !strings.Contains(v["error"].(string), "already in the index") {
		t.Fatalf("add of an existing id = %d %v", code, v)
	}
	if msg := v["error"].(string); strings.Contains(msg, "store:") {
		t.Errorf("the error names a Go package: %q", msg)
	}
	code, v = do(t, ts, "POST", "/v1/batch/check-and-add", `{"documents":[
		{"id":"b1","text":"a completely new story about the weather in the northern mountains this weekend"},
		{"id":"b2","text":"A completely new story about the weather in the northern mountains this weekend."},
		{"id":"b3","text":"`+foxText+`"},
		{"id":"fox","text":"unrelated words for an id that exists already in the index"}], "limit": 1}`)
	if code != 200 {
		t.Fatalf("batch check-and-add = %d %v", code, v)
	}
	rs := v["results"].([]any)
	want := []struct {
		added, dup bool
		err        string
	}{{true, false, ""}, {false, true, ""}, {false, true, ""}, {false, false, `id already in the index: "fox"`}}
	for i, w := range want {
		r := rs[i].(map[string]any)
		e, _ := r["error"].(string)
		// A batch result's error reads as the 409 of a single add: no
		// Go package prefix ("store: ").
		if r["added"] != w.added || r["duplicate"] != w.dup || e != w.err {
			t.Errorf("batch result %d = %v, want %+v", i, r, w)
		}
	}
	if n := len(rs[2].(map[string]any)["matches"].([]any)); n != 1 {
		t.Errorf("limit 1 gave %d matches", n)
	}
	code, v = do(t, ts, "POST", "/v1/batch/check", `{"documents":[{"text":"`+foxText+`"},{"id":"q","text":"nothing like it"}]}`)
	if code != 200 || v["results"].([]any)[0].(map[string]any)["duplicate"] != true || v["results"].([]any)[1].(map[string]any)["duplicate"] != false {
		t.Fatalf("batch check = %d %v", code, v)
	}
	code, v = do(t, ts, "POST", "/v1/batch/add", `{"documents":[{"id":"c1","text":"x y z"},{"id":"c2","text":"x y z"}]}`)
	if code != 200 || st.Len() != 5 {
		t.Fatalf("batch add = %d %v, %d documents", code, v, st.Len())
	}
	code, _ = do(t, ts, "GET", "/v1/docs/c1", "")
	if code != 200 {
		t.Errorf("GET c1 = %d", code)
	}
	code, _ = do(t, ts, "DELETE", "/v1/docs/c1", "")
	if code != 200 {
		t.Errorf("DELETE c1 = %d", code)
	}
	code, _ = do(t, ts, "GET", "/v1/docs/c1", "")
	if code != 404 {
		t.Errorf("GET removed c1 = %d", code)
	}
	code, v = do(t, ts, "POST", "/v1/remove", `{"ids":["c2","nope"]}`)
	r0, r1 := v["results"].([]any)[0].(map[string]any), v["results"].([]any)[1].(map[string]any)
	if code != 200 || r0["removed"] != true || r1["removed"] != false || r1["error"] != "not found" {
		t.Errorf("remove = %d %v", code, v)
	}
	code, v = do(t, ts, "GET", "/v1/stats", "")
	if code != 200 || v["docs"].(float64) != 3 {
		t.Errorf("stats = %d %v", code, v)
	}
	code, v = do(t, ts, "GET", "/metrics", "")
	if code != 200 {
		t.Fatalf("metrics = %d", code)
	}
	text := v["raw"].(string)
	for _, want := range []string{
		"# TYPE neardup_http_requests_total counter",
		`neardup_http_requests_total{route="check_and_add",code="201"} 1`,
		`neardup_http_request_duration_seconds_bucket{route="check",le="+Inf"} 2`,
		"neardup_index_documents 3",
		"neardup_documents_added_total 5",
		"# TYPE neardup_index_postings_bytes gauge",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	checkExposition(t, text)
}

// checkExposition checks the Prometheus text format line by line: comments
// are HELP or TYPE, samples are name{labels} value.
func checkExposition(t *testing.T, text string) {
	t.Helper()
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || !slices.Contains([]string{"counter", "gauge", "histogram"}, f[1]) {
				t.Errorf("bad TYPE line %q", line)
			}
			typed[f[0]] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(value, " ") {
			t.Errorf("bad sample line %q", line)
			continue
		}
		if i := strings.IndexByte(name, '{'); i >= 0 {
			if !strings.HasSuffix(name, "}") {
				t.Errorf("bad labels in %q", line)
			}
			name = name[:i]
		}
		base := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && typed[b] {
				base = b
			}
		}
		if !typed[base] {
			t.Errorf("sample %q has no TYPE", line)
		}
		var f float64
		if _, err := fmt.Sscan(value, &f); err != nil {
			t.Errorf("sample %q: value: %v", line, err)
		}
	}
}

// snapshot lists the ids of the index.
func snapshot(t testing.TB, st *store.Store) []string {
	var ids []string
	if err := st.Each(func(id string, _ sketch.Sketch) error { ids = append(ids, id); return nil }); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestBadInput(t *testing.T) {
	st, ts := newTest(t, sketch.SimHash, Config{MaxBodyBytes: 4096, MaxDocBytes: 1000, MaxBatch: 3})
	if code, _ := do(t, ts, "POST", "/v1/add", `{"id":"seed","text":"a document already there"}`); code != 201 {
		t.Fatal(code)
	}
	before := snapshot(t, st)
	big := strings.Repeat("word ", 2000)
	for _, tc := range []struct {
		method, path, body string
		code               int
		msg                string
	}{
		{"POST", "/v1/check-and-add", `{"id":"x","text":`, 400, "malformed JSON"},
		{"POST", "/v1/check-and-add", `not json`, 400, "malformed JSON"},
		{"POST", "/v1/check-and-add", ``, 400, "empty request body"},
		{"POST", "/v1/check-and-add", `{"id":"x","text":"a"} {}`, 400, "data after the JSON object"},
		{"POST", "/v1/check-and-add", `{"id":"x","text":42}`, 400, "text must be a string"},
		{"POST", "/v1/check-and-add", `{"id":7,"text":"a"}`, 400, "id must be a string"},
		{"POST", "/v1/check-and-add", `["id","text"]`, 400, "must be an object"},
		{"POST", "/v1/check-and-add", `{"id":"x"}`, 400, `missing "text"`},
		{"POST", "/v1/check-and-add", `{"text":"a"}`, 400, `missing "id"`},
		{"POST", "/v1/add", `{"id":"","text":"a"}`, 400, `empty "id"`},
		{"POST", "/v1/add", `{"id":"x","text":"a","limit":-1}`, 400, "limit"},
		{"POST", "/v1/add", `{"id":"x","text":"bad \udc00 surrogate"}`, 400, "text is not valid UTF-8"},
		{"POST", "/v1/add", `{"id":"x","text":"bad \ud800\u0041 pair"}`, 400, "text is not valid UTF-8"},
		{"POST", "/v1/add", "{\"id\":\"x\",\"text\":\"bad \xff byte\"}", 400, "text is not valid UTF-8"},
		{"POST", "/v1/add", "{\"id\":\"x\xff\",\"text\":\"a\"}", 400, "id is not valid UTF-8"},
		{"POST", "/v1/check-and-add", "{\"id\":\"x\\udfff\",\"text\":\"a\"}", 400, "id is not valid UTF-8"},
		{"POST", "/v1/check", "{\"text\":\"\xc3\"}", 400, "text is not valid UTF-8"},
		{"POST", "/v1/batch/add", "{\"documents\":[{\"id\":\"a\",\"text\":\"x\"},{\"id\":\"b\",\"text\":\"\xe4\xb8\"}]}", 400, "documents[1].text is not valid UTF-8"},
		{"POST", "/v1/batch/check", "{\"documents\":[{\"text\":\"x\"},{\"te\xffxt\":\"y\"}]}", 400, "a member name in documents[1] is not valid UTF-8"},
		{"POST", "/v1/remove", "{\"ids\":[\"seed\",\"seed\xff\"]}", 400, "ids[1] is not valid UTF-8"},
		{"POST", "/v1/check", `{"text":"` + big[:1500] + `"}`, 413, "text of 1,500 bytes, more than the server's --max-doc-bytes (1,000 bytes); a server started with --max-doc-bytes 2048 admits it"},
		{"POST", "/v1/batch/check", `{"documents":[{"text":"x"},{"text":"` + big[:1025] + `"}]}`, 413, "documents[1]: text of 1,025 bytes, more than the server's --max-doc-bytes (1,000 bytes); a server started with --max-doc-bytes 2048 admits it"},
		{"POST", "/v1/check", `{"text":"` + big + `"}`, 413, "request body over 4096 bytes (the server's --max-body-bytes)"},
		{"POST", "/v1/batch/add", `{"documents":[{"id":"a","text":"x"},{"id":"b"}]}`, 400, `documents[1]: missing "text"`},
		{"POST", "/v1/batch/add", `{"documents":[{"id":"a","text":"x"},{"id":"b","text":1}]}`, 400, "documents[1].text must be a string, not number"},
		{"POST", "/v1/batch/check", `{"documents":[{"text":"x"},{"text":"y"},{"text":"z","id":{"a":1}}]}`, 400, "documents[2].id must be a string, not object"},
		{"POST", "/v1/remove", `{"ids":["seed",7]}`, 400, "ids[1] must be a string, not number"},
		{"POST", "/v1/batch/check", `{"documents":[{"text":"x"}],"limit":"3"}`, 400, "malformed request: limit must be a whole number from 0 to 9223372036854775807, not string"},
		{"POST", "/v1/check", `{"text":"x","limit":1.5}`, 400, "malformed request: limit must be a whole number from 0 to 9223372036854775807, not 1.5"},
		{"POST", "/v1/batch/check", `{"documents":[{"text":"x"}],"limit":1e20}`, 400, "limit must be a whole number from 0 to 9223372036854775807, not 1e20"},
		{"POST", "/v1/batch/add", `{"documents":{"id":"a"}}`, 400, "must be an array"},
		{"POST", "/v1/batch/add", `{"docs":[]}`, 400, `missing "documents"`},
		{"POST", "/v1/batch/check-and-add", `{"documents":[{"id":"a","text":"x"},{"id":"b","text":"x"},{"id":"c","text":"x"},{"id":"d","text":"x"}]}`, 413, "at most 3 (the server's --max-batch)"},
		{"POST", "/v1/remove", `{"ids":"seed"}`, 400, "must be an array"},
		{"POST", "/v1/remove", `{"ids":["seed",""]}`, 400, "ids[1]: an empty id"},
		{"POST", "/v1/remove", `{}`, 400, `missing "ids"`},
		{"GET", "/v1/check", ``, 405, "method not allowed"},
		{"PUT", "/v1/docs/seed", ``, 405, "method not allowed"},
		{"GET", "/v2/nothing", ``, 404, "no route"},
		{"GET", "/v1/docs/missing", ``, 404, "not in the index"},
		{"DELETE", "/v1/docs/missing", ``, 404, "not in the index"},
	} {
		if tc.code == 0 {
			continue
		}
		code, v := do(t, ts, tc.method, tc.path, tc.body)
		msg, _ := v["error"].(string)
		if code != tc.code || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s %s %.60q = %d %q, want %d %q", tc.method, tc.path, tc.body, code, msg, tc.code, tc.msg)
		}
		if strings.Contains(msg, "store:") {
			t.Errorf("%s %s: the error names a Go package: %q", tc.method, tc.path, msg)
		}
		if got := snapshot(t, st); !slices.Equal(got, before) {
			t.Fatalf("%s %s %.60q changed the index: %v", tc.method, tc.path, tc.body, got)
		}
	}
	// Still serving.
	if code, v := do(t, ts, "POST", "/v1/check", `{"text":"a document already there"}`); code != 200 || v["duplicate"] != true {
		t.Errorf("after bad input, check = %d %v", code, v)
	}
	// A surrogate pair escaped in JSON is valid.
	if code, v := do(t, ts, "POST", "/v1/add", `{"id":"pair\ud83d\ude00","text":"a \\ud800 escaped backslash \ud83d\ude00"}`); code != 201 || v["id"] != "pair\U0001F600" {
		t.Errorf("surrogate pair = %d %v", code, v)
	}
}

func TestToken(t *testing.T) {
	_, ts := newTest(t, sketch.MinHash, Config{Token: "s3cret"})
	if code, v := do(t, ts, "POST", "/v1/check", `{"text":"x"}`); code != 401 || v["error"] == nil {
		t.Errorf("no token = %d %v", code, v)
	}
	if code, _ := do(t, ts, "GET", "/metrics", "", "Authorization", "Bearer wrong"); code != 401 {
		t.Errorf("wrong token = %d", code)
	}
	if code, _ := do(t, ts, "POST", "/v1/check", `{"text":"x"}`, "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("right token = %d", code)
	}
	for _, h := range []string{"bearer s3cret", "BEARER s3cret", "Bearer   s3cret"} {
		if code, _ := do(t, ts, "POST", "/v1/check", `{"text":"x"}`, "Authorization", h); code != 200 {
			t.Errorf("Authorization: %s = %d", h, code)
		}
	}
	for _, h := range []string{"Basic s3cret", "Bearers3cret", "bearer", "Bearer s3cret2", "s3cret"} {
		if code, _ := do(t, ts, "POST", "/v1/check", `{"text":"x"}`, "Authorization", h); code != 401 {
			t.Errorf("Authorization: %s = %d", h, code)
		}
	}
	if code, _ := do(t, ts, "GET", "/healthz", ""); code != 200 {
		t.Errorf("healthz without token = %d", code)
	}
}

func TestTimeout(t *testing.T) {
	st, ts := newTest(t, sketch.MinHash, Config{Timeout: time.Nanosecond})
	code, v := do(t, ts, "POST", "/v1/check-and-add", `{"id":"a","text":"some text here"}`)
	if code != 503 || st.Len() != 0 {
		t.Errorf("timed-out request = %d %v, %d documents", code, v, st.Len())
	}
}

// TestConcurrentHTTP sends the same document from many clients at once
// through the API: exactly one is added.
func TestConcurrentHTTP(t *testing.T) {
	st, ts := newTest(t, sketch.MinHash, Config{})
	const clients, rounds = 24, 5
	for round := range rounds {
		var words []string
		for i := range 60 {
			words = append(words, fmt.Sprintf("r%dw%d", round, i*7919%1000))
		}
		text := strings.Join(words, " ")
		var wg sync.WaitGroup
		var mu sync.Mutex
		added := 0
		for i := range clients {
			wg.Go(func() {
				body := fmt.Sprintf(`{"id":"r%d-%d","text":%q}`, round, i, text)
				path := "/v1/check-and-add"
				if i%3 == 0 {
					path = "/v1/batch/check-and-add"
					body = `{"documents":[` + body + `]}`
				}
				resp, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if bytes.Contains(b, []byte(`"added":true`)) {
					mu.Lock()
					added++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if added != 1 {
			t.Fatalf("round %d: %d of %d identical documents added", round, added, clients)
		}
	}
	if st.Len() != rounds {
		t.Errorf("Len = %d", st.Len())
	}
}

// FuzzRequest sends arbitrary bodies to every POST route: the answer is
// JSON, never a 5xx, and a 4xx leaves the index unchanged.
func FuzzRequest(f *testing.F) {
	st, err := store.Create(f.TempDir(), sketch.Default(sketch.MinHash), store.Options{NoSync: true, CacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	srv, err := New(st, Config{MaxBodyBytes: 1 << 14, MaxDocBytes: 1 << 12, MaxBatch: 8})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	routes := []string{"/v1/check", "/v1/add", "/v1/check-and-add", "/v1/batch/check", "/v1/batch/add", "/v1/batch/check-and-add", "/v1/remove"}
	f.Add(uint8(0), []byte(`{"text":"hello world"}`))
	f.Add(uint8(2), []byte(`{"id":"a","text":"hello world","limit":3}`))
	f.Add(uint8(5), []byte(`{"documents":[{"id":"a","text":"x"},{"id":"b","text":"y"}]}`))
	f.Add(uint8(6), []byte(`{"ids":["a","b"]}`))
	f.Add(uint8(1), []byte(`{"id":"a","text":"\ud800"}`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		before := st.Len()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body)
		}
		var v map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %q: response %q is not a JSON object", path, body, rec.Body)
		}
		if rec.Code >= 400 && (v["error"] == nil || st.Len() != before) {
			t.Fatalf("%s %q: %d %v, documents %d -> %d", path, body, rec.Code, v, before, st.Len())
		}
	})
}

// TestLargeBatch sends a batch large enough to be sketched and checked in
// parallel: the second half repeats the first, each document must be found
// as the duplicate of its own original.
func TestLargeBatch(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		st, ts := newTest(t, m, Config{})
		var docs []string
		for i := range 100 {
			var w []string
			for j := range 80 {
				w = append(w, fmt.Sprintf("d%dw%d", i%50, (j*31+i%50)%500))
			}
			docs = append(docs, fmt.Sprintf(`{"id":"x%d","text":%q}`, i, strings.Join(w, " ")))
		}
		code, v := do(t, ts, "POST", "/v1/batch/check-and-add", `{"documents":[`+strings.Join(docs, ",")+`]}`)
		if code != 200 {
			t.Fatalf("%s: %d %v", m, code, v)
		}
		for i, r := range v["results"].([]any) {
			r := r.(map[string]any)
			if i < 50 {
				if r["added"] != true {
					t.Fatalf("%s: x%d not added: %v", m, i, r)
				}
				continue
			}
			ms := r["matches"].([]any)
			if r["added"] != false || len(ms) == 0 || ms[0].(map[string]any)["id"] != fmt.Sprint("x", i-50) {
				t.Fatalf("%s: x%d = %v, want a duplicate of x%d", m, i, r, i-50)
			}
		}
		if st.Len() != 50 {
			t.Errorf("%s: %d documents", m, st.Len())
		}
	}
}

// TestNoPathsInResponses checks that neither /v1/stats nor a 500 names the
// index directory; the 500's cause goes to the error log.
func TestNoPathsInResponses(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Create(dir, sketch.Default(sketch.MinHash), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	ro, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	var logged bytes.Buffer
	srv, err := New(ro, Config{ErrorLog: log.New(&logged, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	for _, rq := range [][3]string{
		{"GET", "/v1/stats", ""},
		{"POST", "/v1/add", `{"id":"a","text":"a read-only index refuses it"}`}, // a 500
	} {
		req, _ := http.NewRequest(rq[0], ts.URL+rq[1], strings.NewReader(rq[2]))
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), dir) || strings.Contains(string(b), "/tmp") {
			t.Errorf("%s %s = %d %s: names a path", rq[0], rq[1], resp.StatusCode, b)
		}
		if rq[0] == "POST" && resp.StatusCode != 500 {
			t.Errorf("add to a read-only index = %d %s, want 500", resp.StatusCode, b)
		}
	}
	if !strings.Contains(logged.String(), dir) {
		t.Errorf("the 500's cause was not logged with its path: %q", logged.String())
	}
}

// TestDotIDs: documents with the ids "." and ".." (which add accepts) can
// be read and deleted; the mux alone redirected /v1/docs/. and /v1/docs/..
// (also written %2E) with 307 (issue 32 item 6).
func TestDotIDs(t *testing.T) {
	_, ts := newTest(t, sketch.MinHash, Config{})
	for _, id := range []string{".", ".."} {
		if code, v := do(t, ts, "POST", "/v1/add", `{"id":"`+id+`","text":"the document whose id is `+id+`"}`); code/100 != 2 {
			t.Fatalf("add %q = %d %v", id, code, v)
		}
	}
	ts.Client().CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, c := range []struct{ path, id string }{{"/v1/docs/.", "."}, {"/v1/docs/..", ".."}, {"/v1/docs/%2E", "."}, {"/v1/docs/%2e%2E", ".."}} {
		if code, v := do(t, ts, "GET", c.path, ""); code != 200 || v["id"] != c.id {
			t.Errorf("GET %s = %d %v, want 200 with id %q", c.path, code, v, c.id)
		}
	}
	// An id with slashes, written as is or escaped: the mux's {id} took
	// one segment, and /v1/docs/a/b was "no route".
	for _, id := range []string{"business/001", "a//b/../c/"} {
		if code, v := do(t, ts, "POST", "/v1/add", `{"id":"`+id+`","text":"the document whose id is `+id+`"}`); code/100 != 2 {
			t.Fatalf("add %q = %d %v", id, code, v)
		}
		for _, path := range []string{"/v1/docs/" + id, "/v1/docs/" + url.PathEscape(id)} {
			if code, v := do(t, ts, "GET", path, ""); code != 200 || v["id"] != id {
				t.Errorf("GET %s = %d %v, want 200 with id %q", path, code, v, id)
			}
		}
		if resp, err := ts.Client().Head(ts.URL + "/v1/docs/" + id); err != nil || resp.StatusCode != 200 {
			t.Errorf("HEAD /v1/docs/%s = %v %v, want 200", id, resp, err)
		} else {
			resp.Body.Close()
		}
		if code, v := do(t, ts, "DELETE", "/v1/docs/"+id, ""); code != 200 || v["id"] != id {
			t.Errorf("DELETE /v1/docs/%s = %d %v, want 200", id, code, v)
		}
	}
	for _, c := range []struct{ path, id string }{{"/v1/docs/.", "."}, {"/v1/docs/%2E%2E", ".."}} {
		if code, v := do(t, ts, "DELETE", c.path, ""); code != 200 {
			t.Errorf("DELETE %s = %d %v, want 200", c.path, code, v)
		}
		if code, _ := do(t, ts, "GET", c.path, ""); code != 404 {
			t.Errorf("GET %s after its DELETE = %d, want 404", c.path, code)
		}
	}
}

// TestBatchChunks checks batches of several sketching chunks (ended by
// size, then by count: sketchChunkBytes, sketchChunkDocs) against the
// index's answers for the same documents one by one: batch/check answers
// what Query answers for each, and batch/check-and-add on an empty index
// what CheckAndAdd in order does on another, with MinHash (candidates
// verified by the shingle sets) and SimHash.
func TestBatchChunks(t *testing.T) {
	type doc struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	var docs []doc
	for i := range sketchChunkDocs + 900 {
		// Variants of 150 texts with one word in 30 or in 60 replaced,
		// near the threshold.
		w := make([]string, 60)
		for j := range w {
			w[j] = fmt.Sprintf("b%dw%d", i%150, j)
		}
		for j := i % 7; j < len(w); j += 30 + 30*(i%2) {
			w[j] = fmt.Sprintf("v%d", i)
		}
		text := strings.Join(w, " ")
		if i%200 == 3 && i < 1000 { // 900 KiB: the first chunk ends by size
			x := fmt.Sprint(" x", i)
			text += strings.Repeat(x, (900<<10)/len(x))
		}
		docs = append(docs, doc{fmt.Sprint("d", i), text})
	}
	body, err := json.Marshal(map[string][]doc{"documents": docs})
	if err != nil {
		t.Fatal(err)
	}
	var req batchRequest
	if err := decodeBody(body, &req); err != nil {
		t.Fatal(err)
	}
	first := sketchChunk(*req.Documents, 0)
	if second := sketchChunk(*req.Documents, first); first >= sketchChunkDocs || second-first != sketchChunkDocs || second == len(docs) {
		t.Fatalf("chunks end at %d and %d: want the first cut by size, the second by count, a third", first, second)
	}
	// want is v as the server's JSON would give it.
	want := func(v any) any {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var w any
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		cfg := Config{MaxBodyBytes: 64 << 20}
		st, ts := newTest(t, m, cfg)
		sk, err := st.NewSketcher()
		if err != nil {
			t.Fatal(err)
		}
		index := make([]store.Doc, 150)
		for i, d := range docs[:len(index)] {
			index[i] = store.Doc{ID: d.ID, Sketch: sk.Sketch(d.Text)}
			index[i].Sketch.Sig = slices.Clone(index[i].Sketch.Sig)
		}
		if _, err := st.AddBatch(index); err != nil {
			t.Fatal(err)
		}
		code, v := do(t, ts, "POST", "/v1/batch/check", string(body))
		if code != 200 {
			t.Fatalf("%s: batch/check: %d %v", m, code, v)
		}
		got := v["results"].([]any)
		dups := 0
		for i, d := range docs {
			ms, err := st.Query(nil, sk.Sketch(d.Text), DefaultLimit)
			if err != nil {
				t.Fatal(err)
			}
			if w := want(CheckResult{ID: d.ID, Duplicate: len(ms) > 0, Matches: nonNil(ms)}); !reflect.DeepEqual(got[i], w) {
				t.Fatalf("%s: batch/check document %d = %v, want %v", m, i, got[i], w)
			}
			if len(ms) > 0 {
				dups++
			}
		}
		// Check-and-add: the batch on one empty index, the documents in
		// order on another.
		_, tb := newTest(t, m, cfg)
		so, err := store.Create(t.TempDir(), sketch.Default(m), store.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer so.Close()
		code, v = do(t, tb, "POST", "/v1/batch/check-and-add", string(body))
		if code != 200 {
			t.Fatalf("%s: batch/check-and-add: %d %v", m, code, v)
		}
		got = v["results"].([]any)
		added := 0
		for i, d := range docs {
			res, err := so.CheckAndAdd(d.ID, sk.Sketch(d.Text), DefaultLimit)
			if err != nil {
				t.Fatal(err)
			}
			if w := want(AddResult{ID: d.ID, Added: res.Added, Duplicate: len(res.Matches) > 0, Matches: nonNil(res.Matches)}); !reflect.DeepEqual(got[i], w) {
				t.Fatalf("%s: batch/check-and-add document %d = %v, want %v", m, i, got[i], w)
			}
			if res.Added {
				added++
			}
		}
		if dups == 0 || dups == len(docs) || added == 0 || added == len(docs) {
			t.Errorf("%s: %d of %d checked duplicates, %d added: want some of each", m, dups, len(docs), added)
		}
	}
}

// TestAllowHeader: a 405's Allow names every method the path answers,
// HEAD with GET (the router answers HEAD wherever it answers GET).
func TestAllowHeader(t *testing.T) {
	_, ts := newTest(t, sketch.MinHash, Config{})
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/v1/stats", "GET, HEAD"},
		{"GET", "/v1/check", "POST"},
		{"PUT", "/v1/docs/seed", "GET, HEAD, DELETE"},
	} {
		req, err := http.NewRequest(tc.method, ts.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s = %d, Allow %q, want 405, %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.allow)
		}
		if strings.Contains(tc.allow, "HEAD") {
			resp, err := http.Head(ts.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 && resp.StatusCode != 404 {
				t.Errorf("HEAD %s = %d", tc.path, resp.StatusCode)
			}
		}
	}
}

// TestContentEncoding: a compressed request body is refused with 415
// naming its Content-Encoding (it was read as JSON: 400 "invalid
// character '\x1f'"); "identity" is no encoding.
func TestContentEncoding(t *testing.T) {
	_, srv := newServer(t, sketch.MinHash, Config{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	code, v := do(t, ts, "POST", "/v1/check", "\x1f\x8b\x08\x00", "Content-Encoding", "gzip")
	if msg, _ := v["error"].(string); code != http.StatusUnsupportedMediaType || !strings.Contains(msg, `Content-Encoding "gzip"`) {
		t.Errorf("gzip body = %d %v, want 415 naming the encoding", code, v)
	}
	if code, v := do(t, ts, "POST", "/v1/check", `{"text":"a b c"}`, "Content-Encoding", "identity"); code != 200 {
		t.Errorf("identity = %d %v, want 200", code, v)
	}
}
