package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/neardup/neardup/store"
)

// serveInProcess runs serve on dir in this process with args added, as
// SIGTERM would stop it when ctx is canceled, and returns its address
// and a channel of its end. The handler of its requests to /v1/add is
// slow (wrapped by testHookServeHandler).
func serveInProcess(t *testing.T, ctx context.Context, dir string, stderr io.Writer, args ...string) (addr string, end <-chan error) {
	t.Helper()
	af := filepath.Join(t.TempDir(), "addr")
	cmd := newServeCmd()
	cmd.SetErr(stderr)
	cmd.SetOut(io.Discard)
	cmd.SetArgs(append([]string{"--index", dir, "--addr", "127.0.0.1:0", "--addr-file", af}, args...))
	c := make(chan error, 1)
	go func() { c <- cmd.ExecuteContext(ctx) }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if b, err := os.ReadFile(af); err == nil && strings.HasSuffix(string(b), "\n") {
			return "http://" + strings.TrimSpace(string(b)), c
		}
		select {
		case err := <-c:
			t.Fatalf("serve ended: %v\n%s", err, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start\n%s", stderr)
	return "", nil
}

// slowAdd is a handler hook for the index dir: its /v1/add requests,
// their body read, wait for wake, then are served with a context that is
// not canceled (as a handler past its last check of the context is),
// their status sent on served. entered is closed when the first arrives.
func slowAdd(t *testing.T, dir string, wake func(*http.Request), entered chan<- struct{}, served chan<- int) {
	hook := func(loc string, next http.Handler) http.Handler {
		if loc != dir {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/add" {
				next.ServeHTTP(w, r)
				return
			}
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			close(entered)
			wake(r)
			r2 := r.Clone(context.WithoutCancel(r.Context()))
			r2.Body = io.NopCloser(bytes.NewReader(body))
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r2)
			served <- rec.Code
		})
	}
	testHookServeHandler.Store(&hook)
	t.Cleanup(func() { testHookServeHandler.Store(nil) })
}

// postAdd sends an add of id a to addr, whose answer is not looked at
// (its connection is cut).
func postAdd(addr string) {
	go func() {
		resp, err := http.Post(addr+"/v1/add", "application/json", strings.NewReader(`{"id": "a", "text": "a document whose handler outlives the shutdown of the server"}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
}

// indexHolds opens dir and tells whether it holds document a.
func indexHolds(t *testing.T, dir string) bool {
	t.Helper()
	st, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Get("a")
	return err == nil
}

// TestServeShutdownSlowHandler: a request whose handler goes on after
// --shutdown-timeout cut its connection (its context canceled, it ends
// its write) is waited for, a bounded while, before the index is closed:
// serve closed the index under it, which then failed ("the index is
// closed", 503) or wrote before the close by chance.
func TestServeShutdownSlowHandler(t *testing.T) {
	dir := createIndex(t)
	entered, served := make(chan struct{}), make(chan int, 1)
	slowAdd(t, dir, func(r *http.Request) { <-r.Context().Done() }, entered, served)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stderr lockedBuffer
	addr, end := serveInProcess(t, ctx, dir, &stderr, "--shutdown-timeout", "100ms")
	postAdd(addr)
	<-entered
	stop()
	err := <-end
	if code := <-served; code != http.StatusCreated {
		t.Errorf("the add whose handler outlived --shutdown-timeout got %d, want 201 (the index open under it)", code)
	}
	var fas failedAfterSignal
	if !errors.As(err, &fas) || !strings.Contains(err.Error(), "--shutdown-timeout 100ms passed with requests still running") || strings.Contains(err.Error(), "not closed") {
		t.Errorf("serve ended: %v, want the requests cut off named\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "flushed and closed") {
		t.Errorf("serve did not flush and close the index:\n%s", stderr.String())
	}
	if !indexHolds(t, dir) {
		t.Error("the document acknowledged to the handler is not in the index")
	}
}

// TestServeShutdownHandlerOutlivesWait: a handler that outlives
// --shutdown-timeout and the wait after it (its work goes on past serve's
// end) finds the index open, not closed under it; serve says it left the
// index open, and closes it once the handler ends. The index was closed
// under it: its add got 503 "the index is closed".
func TestServeShutdownHandlerOutlivesWait(t *testing.T) {
	dir := createIndex(t)
	entered, served := make(chan struct{}), make(chan int, 1)
	release := make(chan struct{})
	slowAdd(t, dir, func(*http.Request) { <-release }, entered, served)
	closed := make(chan error, 1)
	closedHook := func(loc string, err error) {
		if loc == dir {
			closed <- err
		}
	}
	testHookServeClosedLate.Store(&closedHook)
	defer testHookServeClosedLate.Store(nil)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stderr lockedBuffer
	addr, end := serveInProcess(t, ctx, dir, &stderr, "--shutdown-timeout", "100ms")
	postAdd(addr)
	<-entered
	stop()
	err := <-end
	// The handler goes on after serve's end.
	close(release)
	if code := <-served; code != http.StatusCreated {
		t.Errorf("the add whose handler outlived serve got %d, want 201 (the index open under it)", code)
	}
	var fas failedAfterSignal
	want := "--shutdown-timeout 100ms passed with requests still running: they were cut off without an answer (a write among them may or may not have been applied), and 1 request still ran 100ms later: the index was not closed under them"
	if !errors.As(err, &fas) || !strings.Contains(err.Error(), want) {
		// Nor is the index closed late (testHookServeClosedLate).
		t.Fatalf("serve ended: %v\nwant it to say\n%s", err, want)
	}
	if strings.Contains(stderr.String(), "flushed and closed") {
		t.Errorf("serve says it closed the index under a request:\n%s", stderr.String())
	}
	if err := <-closed; err != nil {
		t.Errorf("the close once the request ended: %v", err)
	}
	if !indexHolds(t, dir) {
		t.Error("the document acknowledged to the handler is not in the index")
	}
}
