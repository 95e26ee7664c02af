package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/objstoretest"
)

// The gs:// client against fakeGCS, a small server of the JSON API whose
// answers a test can replace, for what the emulator cannot show: failures
// that pass, a chunk half kept, a read broken half-way, refused
// credentials.

// fakeGCS is one bucket, "b", of the Cloud Storage JSON API.
type fakeGCS struct {
	t        *testing.T
	url      string
	pageSize int // of a listing

	mu       sync.Mutex
	objects  map[string][]byte
	gens     map[string]int64
	sessions map[string]*fakeSession
	nextID   int
	log      []string // "METHOD path?query [Range or Content-Range]" of each request
	// hook, when set, may answer a request instead of the server (it
	// returns true then). It is called with hookMu held, not mu.
	hookMu sync.Mutex
	hook   func(w http.ResponseWriter, r *http.Request) bool
}

// setHook sets f.hook.
func (f *fakeGCS) setHook(hook func(w http.ResponseWriter, r *http.Request) bool) {
	f.hookMu.Lock()
	defer f.hookMu.Unlock()
	f.hook = hook
}

// runHook runs f.hook, if any, on a request.
func (f *fakeGCS) runHook(w http.ResponseWriter, r *http.Request) bool {
	f.hookMu.Lock()
	defer f.hookMu.Unlock()
	return f.hook != nil && f.hook(w, r)
}

// reqLine is "METHOD path?query" of a request, its path unescaped.
func reqLine(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return r.Method + " " + r.URL.Path
	}
	return r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery
}

type fakeSession struct {
	name string
	data []byte
}

func newFakeGCS(t *testing.T) *fakeGCS {
	f := &fakeGCS{t: t, pageSize: 1000, objects: map[string][]byte{}, gens: map[string]int64{}, sessions: map[string]*fakeSession{}}
	ts := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(ts.Close)
	f.url = ts.URL
	t.Setenv("STORAGE_EMULATOR_HOST", ts.URL)
	return f
}

// requests returns the log lines that start with prefix.
func (f *fakeGCS) requests(prefix string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, l := range f.log {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func (f *fakeGCS) object(name string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[name]
	return b, ok
}

func (f *fakeGCS) setObject(name string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objects[name] = data
	f.gens[name]++
}

// gcsAnswer writes an error answer of the API.
func gcsAnswer(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

func crc32c(b []byte) string {
	var c [4]byte
	binary.BigEndian.PutUint32(c[:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(c[:])
}

func (f *fakeGCS) serve(w http.ResponseWriter, r *http.Request) {
	line := reqLine(r)
	if h := r.Header.Get("Range") + r.Header.Get("Content-Range"); h != "" {
		line += " " + h
	}
	f.mu.Lock()
	f.log = append(f.log, line)
	f.mu.Unlock()
	if f.runHook(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && path == "/storage/v1/b/b/o":
		f.list(w, q)
	case strings.HasPrefix(path, "/storage/v1/b/b/o/"):
		name := strings.TrimPrefix(path, "/storage/v1/b/b/o/")
		data, ok := f.objects[name]
		if ok && q.Get("generation") != "" && q.Get("generation") != strconv.FormatInt(f.gens[name], 10) {
			ok = false
		}
		switch {
		case !ok:
			gcsAnswer(w, http.StatusNotFound, "No such object: b/"+name)
		case r.Method == http.MethodDelete:
			delete(f.objects, name)
			w.WriteHeader(http.StatusNoContent)
		case r.Method == http.MethodGet && q.Get("alt") == "media":
			w.Header().Set("X-Goog-Generation", strconv.FormatInt(f.gens[name], 10))
			w.Header().Set("X-Goog-Hash", "crc32c="+crc32c(data)+",md5=AAAA")
			if rng := r.Header.Get("Range"); rng != "" {
				// bytes=A-, bytes=A-B or bytes=-N.
				a, b, _ := strings.Cut(strings.TrimPrefix(rng, "bytes="), "-")
				from, to := 0, len(data)
				if a == "" {
					n, _ := strconv.Atoi(b)
					from = max(len(data)-n, 0)
				} else {
					from, _ = strconv.Atoi(a)
					if b != "" {
						last, _ := strconv.Atoi(b)
						to = min(last+1, len(data))
					}
				}
				if from >= len(data) {
					gcsAnswer(w, http.StatusRequestedRangeNotSatisfiable, "range")
					return
				}
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to-1, len(data)))
				w.WriteHeader(http.StatusPartialContent)
				w.Write(data[from:to])
				return
			}
			w.Write(data)
		case r.Method == http.MethodGet:
			json.NewEncoder(w).Encode(map[string]string{"name": name})
		default:
			gcsAnswer(w, http.StatusMethodNotAllowed, r.Method)
		}
	case r.Method == http.MethodPost && path == "/upload/storage/v1/b/b/o":
		name := q.Get("name")
		switch q.Get("uploadType") {
		case "media":
			f.objects[name] = body
			f.gens[name]++
			json.NewEncoder(w).Encode(map[string]string{"name": name})
		case "resumable":
			f.nextID++
			id := strconv.Itoa(f.nextID)
			f.sessions[id] = &fakeSession{name: name}
			w.Header().Set("Location", f.url+"/upload/session/"+id)
		default:
			gcsAnswer(w, http.StatusBadRequest, "uploadType")
		}
	case strings.HasPrefix(path, "/upload/session/"):
		s := f.sessions[strings.TrimPrefix(path, "/upload/session/")]
		if s == nil {
			gcsAnswer(w, http.StatusNotFound, "no such upload session")
			return
		}
		if r.Method == http.MethodDelete {
			delete(f.sessions, strings.TrimPrefix(path, "/upload/session/"))
			w.WriteHeader(499)
			return
		}
		f.chunk(w, s, r.Header.Get("Content-Range"), body)
	default:
		gcsAnswer(w, http.StatusNotFound, "no route "+r.Method+" "+path)
	}
}

func (f *fakeGCS) list(w http.ResponseWriter, q map[string][]string) {
	prefix := ""
	if p := q["prefix"]; len(p) > 0 {
		prefix = p[0]
	}
	if fields := q["fields"]; len(fields) != 1 || fields[0] != "items(name,size,generation),nextPageToken" {
		gcsAnswer(w, http.StatusBadRequest, fmt.Sprintf("want names, sizes and generations only, got fields=%q", fields))
		return
	}
	var names []string
	for n := range f.objects {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	from := 0
	if tok := q["pageToken"]; len(tok) > 0 {
		from, _ = strconv.Atoi(tok[0])
	}
	size := f.pageSize
	if m := q["maxResults"]; len(m) > 0 {
		size, _ = strconv.Atoi(m[0])
	}
	page := map[string]any{}
	var items []map[string]string
	for _, n := range names[min(from, len(names)):min(from+size, len(names))] {
		items = append(items, map[string]string{"name": n, "size": strconv.Itoa(len(f.objects[n])), "generation": strconv.FormatInt(f.gens[n], 10)})
	}
	if items != nil {
		page["items"] = items
	}
	if from+size < len(names) {
		page["nextPageToken"] = strconv.Itoa(from + size)
	}
	json.NewEncoder(w).Encode(page)
}

// chunk takes a PUT to an upload session: "bytes A-B/TOTAL" (TOTAL may be
// "*"), or "bytes */TOTAL" to finish or "bytes */*" to ask.
func (f *fakeGCS) chunk(w http.ResponseWriter, s *fakeSession, cr string, body []byte) {
	rng, total, ok := strings.Cut(strings.TrimPrefix(cr, "bytes "), "/")
	if !ok {
		gcsAnswer(w, http.StatusBadRequest, "Content-Range "+cr)
		return
	}
	if rng != "*" {
		a, _, _ := strings.Cut(rng, "-")
		from, _ := strconv.Atoi(a)
		if from != len(s.data) {
			gcsAnswer(w, http.StatusBadRequest, fmt.Sprintf("chunk at %d, the session has %d", from, len(s.data)))
			return
		}
		if total == "*" && len(body)%(256<<10) != 0 {
			gcsAnswer(w, http.StatusBadRequest, fmt.Sprintf("a chunk of %d bytes, not a multiple of 256 KiB", len(body)))
			return
		}
		s.data = append(s.data, body...)
	}
	if total != "*" && strconv.Itoa(len(s.data)) == total {
		f.objects[s.name] = s.data
		f.gens[s.name]++
		json.NewEncoder(w).Encode(map[string]string{"name": s.name})
		return
	}
	if len(s.data) > 0 {
		w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", len(s.data)-1))
	}
	w.WriteHeader(http.StatusPermanentRedirect)
}

// pattern returns n bytes that repeat only every 251 (made without a
// loop over the bytes, which -race makes slow).
func pattern(n int) []byte {
	p := make([]byte, 251)
	for i := range p {
		p[i] = byte(i)
	}
	return bytes.Repeat(p, n/len(p)+1)[:n]
}

func openFake(t *testing.T) *objstore.Folder {
	t.Helper()
	return open(t, "gs://b/pre")
}

// failFirst returns a hook that answers the first request that match
// accepts with status, and lets the others through.
func failFirst(status int, match func(r *http.Request) bool) func(http.ResponseWriter, *http.Request) bool {
	var mu sync.Mutex
	failed := false
	return func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if failed || !match(r) {
			return false
		}
		failed = true
		gcsAnswer(w, status, "try again")
		return true
	}
}

// TestGCSRetry: every idempotent call answered 503 once succeeds on its
// second try; one answered 503 every time fails after maxAttempts (3)
// tries, with the server's message.
func TestGCSRetry(t *testing.T) {
	ctx := context.Background()
	f := newFakeGCS(t)
	f.setObject("pre/x", []byte("hello"))
	calls := []struct {
		name  string
		match string // the start of its request's log line
		run   func(d *objstore.Folder) error
	}{
		{"open", "GET /storage/v1/b/b/o?", func(*objstore.Folder) error {
			d, err := objstore.Open(ctx, "gs://b/pre")
			if err == nil {
				d.Close()
			}
			return err
		}},
		{"read", "GET /storage/v1/b/b/o/pre/x?alt=media", func(d *objstore.Folder) error {
			b, err := d.ReadAll(ctx, "x")
			if err == nil && string(b) != "hello" {
				err = fmt.Errorf("read %q", b)
			}
			return err
		}},
		{"exists", "GET /storage/v1/b/b/o/pre/x?fields=name", func(d *objstore.Folder) error {
			ok, err := d.Exists(ctx, "x")
			if err == nil && !ok {
				err = errors.New("x not found")
			}
			return err
		}},
		{"list", "GET /storage/v1/b/b/o?", func(d *objstore.Folder) error {
			names, err := d.List(ctx, "")
			if err == nil && !slices.Equal(names, []string{"x"}) {
				err = fmt.Errorf("listed %q", names)
			}
			return err
		}},
		{"put", "POST /upload/storage/v1/b/b/o", func(d *objstore.Folder) error {
			return d.PutBytes(ctx, "y", []byte("small"))
		}},
		{"delete", "DELETE /storage/v1/b/b/o/pre/y", func(d *objstore.Folder) error {
			return d.Delete(ctx, "y")
		}},
	}
	d := openFake(t)
	for _, c := range calls {
		before := len(f.requests(c.match))
		f.setHook(failFirst(http.StatusServiceUnavailable, func(r *http.Request) bool {
			return strings.HasPrefix(reqLine(r), c.match)
		}))
		if err := c.run(d); err != nil {
			t.Errorf("%s answered 503 once: %v", c.name, err)
		}
		if n := len(f.requests(c.match)) - before; n != 2 {
			t.Errorf("%s answered 503 once: %d requests, want 2", c.name, n)
		}
	}
	f.setHook(nil)
	if _, ok := f.object("pre/y"); ok {
		t.Errorf("pre/y is still there after its Delete")
	}

	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		gcsAnswer(w, http.StatusServiceUnavailable, "overloaded")
		return true
	})
	before := len(f.requests("GET "))
	_, err := d.Exists(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "503 Service Unavailable: overloaded") {
		t.Errorf("Exists answered 503 every time = %v, want the 503 and its message", err)
	}
	if n := len(f.requests("GET ")) - before; n != 3 {
		t.Errorf("Exists answered 503 every time: %d tries, want 3", n)
	}
	// A 400: no second try.
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		gcsAnswer(w, http.StatusBadRequest, "bad")
		return true
	})
	before = len(f.requests("GET "))
	if _, err := d.Exists(ctx, "x"); err == nil || len(f.requests("GET "))-before != 1 {
		t.Errorf("Exists answered 400: %v after %d tries, want an error after 1", err, len(f.requests("GET "))-before)
	}
}

// TestGCSResumableUpload: a 40 MiB file goes in three chunks; the second
// chunk fails with a 503 after the server kept 4 MiB of it, and the
// upload goes on from where the server says it got to, not from the
// chunk's start. The object is whole; nothing appeared before the last
// chunk.
func TestGCSResumableUpload(t *testing.T) {
	f := newFakeGCS(t)
	d := openFake(t)
	const chunk = 16 << 20
	big := pattern(40<<20 + 12345)
	var seenEarly bool
	failed := false
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if _, ok := f.object("pre/big"); ok {
			seenEarly = seenEarly || !strings.Contains(r.Header.Get("Content-Range"), fmt.Sprintf("/%d", len(big)))
		}
		if failed || r.Method != http.MethodPut || !strings.HasPrefix(r.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", chunk)) {
			return false
		}
		failed = true
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		for _, s := range f.sessions {
			s.data = append(s.data, body[:4<<20]...)
		}
		f.mu.Unlock()
		gcsAnswer(w, http.StatusServiceUnavailable, "backend error")
		return true
	})
	if err := d.PutBytes(context.Background(), "big", big); err != nil {
		t.Fatal(err)
	}
	f.setHook(nil)
	if got, ok := f.object("pre/big"); !ok || !bytes.Equal(got, big) {
		t.Errorf("the object is %d bytes (there: %v), want the %d written", len(got), ok, len(big))
	}
	if seenEarly { // read after setHook: the hook has returned
		t.Errorf("the object appeared before the last chunk")
	}
	puts := f.requests("PUT /upload/session/")
	want := []string{
		fmt.Sprintf("bytes 0-%d/*", chunk-1),
		fmt.Sprintf("bytes %d-%d/*", chunk, 2*chunk-1), // kept 4 MiB, answered 503
		"bytes */*", // how much do you have?
		fmt.Sprintf("bytes %d-%d/*", chunk+4<<20, 2*chunk-1),
		fmt.Sprintf("bytes %d-%d/%d", 2*chunk, len(big)-1, len(big)),
	}
	var got []string
	for _, p := range puts {
		_, cr, _ := strings.Cut(p, " bytes ")
		got = append(got, "bytes "+cr)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the chunks sent were\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A file of exactly one chunk goes in one request, one of two in
	// two chunks, the last one ending the object.
	for _, size := range []int{chunk, 2 * chunk} {
		before := len(f.requests(""))
		if err := d.PutBytes(context.Background(), "edge", big[:size]); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.object("pre/edge"); !bytes.Equal(got, big[:size]) {
			t.Errorf("a file of %d bytes is %d bytes", size, len(got))
		}
		if n := len(f.requests("")) - before; n != size/chunk+btoi(size > chunk) {
			t.Errorf("a file of %d bytes took %d requests", size, n)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGCSPutLeavesNothing: a Put whose context is cancelled after its
// first chunk went, or whose write fails then, or whose chunk is refused,
// leaves no object, and ends its upload session.
func TestGCSPutLeavesNothing(t *testing.T) {
	f := newFakeGCS(t)
	d := openFake(t)
	boom := errors.New("boom")
	chunk := make([]byte, 20<<20) // one chunk sent, 4 MiB waiting
	cases := []struct {
		name  string
		write func(cancel func()) func(io.Writer) error
		hook  func(http.ResponseWriter, *http.Request) bool
		want  string
	}{
		{"cancelled", func(cancel func()) func(io.Writer) error {
			return func(w io.Writer) error {
				_, err := w.Write(chunk)
				cancel()
				return err
			}
		}, nil, "context canceled"},
		{"write fails", func(func()) func(io.Writer) error {
			return func(w io.Writer) error {
				w.Write(chunk)
				return boom
			}
		}, nil, "boom"},
		{"chunk refused", func(func()) func(io.Writer) error {
			return func(w io.Writer) error {
				for range 3 {
					if _, err := w.Write(chunk); err != nil {
						return err
					}
				}
				return nil
			}
		}, failFirst(http.StatusForbidden, func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasPrefix(r.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", 16<<20))
		}), "write gs://b/pre/" + "out: access denied to gs://b/pre/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.setHook(c.hook)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := d.Put(ctx, "out", c.write(cancel))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Put = %v, want %q", err, c.want)
			}
			if _, ok := f.object("pre/out"); ok {
				t.Errorf("the object is there")
			}
			f.mu.Lock()
			n := len(f.sessions)
			f.mu.Unlock()
			if n != 0 {
				t.Errorf("%d upload sessions left, want 0", n)
			}
			if len(f.requests("POST /upload/storage/v1/b/b/o?name=pre%2Fout&uploadType=resumable")) == 0 {
				t.Errorf("no resumable upload was started")
			}
		})
	}
}

// TestGCSReadResumes: a read broken half-way goes on with a ranged read
// of the same generation from the bytes delivered; bytes damaged on the
// way fail the read's CRC32C check.
func TestGCSReadResumes(t *testing.T) {
	f := newFakeGCS(t)
	d := openFake(t)
	data := pattern(3 << 20)
	f.setObject("pre/x", data)
	const cut = 1<<20 + 7
	broken := 0
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("alt") != "media" || r.Header.Get("Range") != "" || broken == 1 {
			return false
		}
		broken++
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Header().Set("X-Goog-Generation", "1")
		w.Header().Set("X-Goog-Hash", "crc32c="+crc32c(data))
		w.Write(data[:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection breaks
	})
	got, err := d.ReadAll(context.Background(), "x")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadAll of a broken read = %d bytes, %v, want %d bytes", len(got), err, len(data))
	}
	if r := f.requests("GET /storage/v1/b/b/o/pre/x?alt=media&generation=1 bytes=" + strconv.Itoa(cut) + "-"); len(r) != 1 {
		t.Errorf("the ranged reads were %q, want one from byte %d of generation 1", f.requests("GET /storage/v1/b/b/o/pre/x"), cut)
	}

	// Damaged bytes.
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("alt") != "media" {
			return false
		}
		bad := bytes.Clone(data)
		bad[12345] ^= 1
		w.Header().Set("X-Goog-Hash", "crc32c="+crc32c(data))
		w.Write(bad)
		return true
	})
	if _, err := d.ReadAll(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "CRC32C") {
		t.Errorf("ReadAll of damaged bytes = %v, want a CRC32C error", err)
	}
}

// TestGCSListPages: a listing of several pages, names only, under the
// prefix; a page broken off is asked for again.
func TestGCSListPages(t *testing.T) {
	f := newFakeGCS(t)
	f.pageSize = 3
	var want []string
	for i := range 10 {
		f.setObject(fmt.Sprintf("pre/d/%02d", i), nil)
		want = append(want, fmt.Sprintf("d/%02d", i))
	}
	f.setObject("pre/d/", nil)      // a folder marker
	f.setObject("pre-other/x", nil) // a sibling prefix
	f.setObject("other", nil)
	d := openFake(t)
	// The second page breaks off once, half-way through its JSON.
	broken := false
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if broken || r.URL.Query().Get("pageToken") != "3" {
			return false
		}
		broken = true
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, `{"items":[{"name":"pre/d/03"},{"na`)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	got, err := d.List(context.Background(), "")
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("List = %q, %v, want %q", got, err, want)
	}
	if n := len(f.requests("GET /storage/v1/b/b/o?fields=")); n != 1+4+1 {
		t.Errorf("%d listings (the open's, the pages and the broken one again), want 1+4+1", n)
	}
}

// TestGCSRefused: the messages of a 401, a 403 and a missing bucket
// answered to the opening check, of missing credentials and of refused
// ones.
func TestGCSRefused(t *testing.T) {
	f := newFakeGCS(t)
	for _, c := range []struct {
		code int
		want []string
	}{
		{http.StatusUnauthorized, []string{"the Google credentials were refused", "GOOGLE_APPLICATION_CREDENTIALS", "401 Unauthorized: no"}},
		{http.StatusForbidden, []string{"access denied to gs://b/pre/", "403 Forbidden: no"}},
		{http.StatusNotFound, []string{`bucket "b" does not exist`, "STORAGE_EMULATOR_HOST is " + f.url}},
	} {
		f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
			gcsAnswer(w, c.code, "no")
			return true
		})
		openFails(t, "gs://b/pre", c.want...)
	}

	t.Setenv("STORAGE_EMULATOR_HOST", "")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "missing.json"))
	openFails(t, "gs://b/pre", "no usable Google credentials", "missing.json")

	// A service account whose token endpoint refuses it: the token is
	// asked for before any request reaches Cloud Storage.
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	}))
	defer tokens.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "client_email": "neardup@example.iam.gserviceaccount.com",
		"private_key_id": "1", "private_key": string(pemKey), "token_uri": tokens.URL,
	})
	keyFile := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(keyFile, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", keyFile)
	openFails(t, "gs://b/pre", "no usable Google credentials", "invalid_grant")
}

// TestGCSNames: object names with characters that URLs escape, on the
// emulator.
func TestGCSNames(t *testing.T) {
	s := objstoretest.GCS(t)
	s.Env(t)
	d := open(t, "gs://"+s.Bucket(t)+"/odd prefix")
	ctx := context.Background()
	names := []string{"a b/c+d", "e%41f", "g?h#i", "j&k=l;m", "ü/€"}
	for _, n := range names {
		if err := d.PutBytes(ctx, n, []byte(n)); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if b, err := d.ReadAll(ctx, n); err != nil || string(b) != n {
			t.Errorf("ReadAll(%q) = %q, %v", n, b, err)
		}
		if ok, err := d.Exists(ctx, n); !ok || err != nil {
			t.Errorf("Exists(%q) = %v, %v", n, ok, err)
		}
	}
	got, err := d.List(ctx, "")
	want := slices.Sorted(slices.Values(names))
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("List = %q, %v, want %q", got, err, want)
	}
	// An empty object.
	if err := d.PutBytes(ctx, "empty", nil); err != nil {
		t.Fatal(err)
	}
	if b, err := d.ReadAll(ctx, "empty"); err != nil || len(b) != 0 {
		t.Errorf("ReadAll(empty) = %q, %v", b, err)
	}
	names = append(names, "empty")
	for _, n := range names {
		if err := d.Delete(ctx, n); err != nil {
			t.Errorf("Delete(%q) = %v", n, err)
		}
	}
	if got, _ := d.List(ctx, ""); len(got) != 0 {
		t.Errorf("List after Delete = %q", got)
	}
}
