package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/testcert"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// The crash tests run the real command line (Main, the same function as
// cmd/neardup) in a child process: this test binary re-executed with
// NEARDUP_SERVE_CHILD=1.
func init() {
	if os.Getenv("NEARDUP_SERVE_CHILD") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
}

type child struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited is closed
}

// wait waits for the process to exit and returns its status.
func (c *child) wait() error {
	<-c.exited
	return c.err
}

func startServer(t *testing.T, args ...string) *child {
	t.Helper()
	return startServerEnv(t, nil, args...)
}

// startServerEnv is startServer with env added to the server's
// environment.
func startServerEnv(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	af := filepath.Join(t.TempDir(), "addr")
	c := &child{stderr: &lockedBuffer{}, exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], append([]string{"serve", "--addr", "127.0.0.1:0", "--addr-file", af}, args...)...)
	c.cmd.Env = append(append(os.Environ(), "NEARDUP_SERVE_CHILD=1"), env...)
	c.cmd.Stderr = c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(af); err == nil && strings.HasSuffix(string(b), "\n") {
			c.addr = "http://" + strings.TrimSpace(string(b))
			return c
		}
		select {
		case <-c.exited:
			t.Fatalf("server exited: %v\n%s", c.err, c.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("server did not start\n%s", c.stderr)
	return nil
}

func createIndex(t *testing.T, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir, args...)
	return dir
}

// createIndexAt runs `index create` for dir.
func createIndexAt(t *testing.T, dir string, args ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append([]string{"index", "create", "--index", dir}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("index create: %d %s", code, errb.String())
	}
}

func randomText(r *rand.Rand) string {
	w := make([]string, 150)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", r.IntN(1<<20))
	}
	return strings.Join(w, " ")
}

// TestServeKill9 streams adds to the server from several clients, kills
// it with SIGKILL in the middle, restarts it and checks that every
// acknowledged document is in the index. Then SIGTERM stops it cleanly.
func TestServeKill9(t *testing.T) {
	dir := createIndex(t)
	srv := startServer(t, "--index", dir)
	client := &http.Client{Timeout: 10 * time.Second}
	load := startAckLoad(t, srv.addr, 6, 99, func(g, i int, r *rand.Rand) (string, []ackDoc) {
		if g%3 == 2 { // batches of 8
			docs := make([]ackDoc, 8)
			for j := range docs {
				docs[j] = ackDoc{fmt.Sprintf("g%d-%d-%d", g, i, j), randomText(r)}
			}
			return "/v1/batch/add", docs
		}
		path := "/v1/check-and-add"
		if g%3 == 1 {
			path = "/v1/add"
		}
		return path, []ackDoc{{fmt.Sprintf("g%d-%d", g, i), randomText(r)}}
	})
	acked := load.killAfter(t, srv, 400)
	t.Logf("%d documents acknowledged before SIGKILL", len(acked))

	srv = startServer(t, "--index", dir)
	for id, text := range acked {
		resp, err := client.Get(srv.addr + "/v1/docs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("acknowledged document %s lost after SIGKILL (GET = %d)", id, resp.StatusCode)
		}
		// And it is found by its text.
		body, _ := json.Marshal(map[string]string{"text": text})
		resp, err = client.Post(srv.addr+"/v1/check", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(b, []byte(`"id":"`+id+`"`)) {
			t.Fatalf("acknowledged document %s not found by its text: %s", id, b)
		}
	}

	// SIGTERM: graceful shutdown, exit code 0, index flushed.
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if err := srv.wait(); err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, srv.stderr)
	}
	if !strings.Contains(srv.stderr.String(), "flushed and closed") {
		t.Errorf("stderr: %s", srv.stderr)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	st.Each(func(string, sketch.Sketch) error { n++; return nil })
	if int64(n) != st.Len() || n < len(acked) {
		t.Errorf("after restart: %d records, counter %d, %d acknowledged", n, st.Len(), len(acked))
	}
}

// TestServeGracefulShutdown sends SIGTERM while a request is in flight
// (its body half sent): the request completes and its documents are kept.
func TestServeGracefulShutdown(t *testing.T) {
	dir := createIndex(t, "--method", "simhash")
	srv := startServer(t, "--index", dir)
	r := rand.New(rand.NewPCG(1, 1))
	var docs []map[string]string
	for i := range 50 {
		docs = append(docs, map[string]string{"id": fmt.Sprint("d", i), "text": randomText(r)})
	}
	body, _ := json.Marshal(map[string]any{"documents": docs})
	pr, pw := io.Pipe()
	type result struct {
		code int
		body []byte
		err  error
	}
	res := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.addr+"/v1/batch/check-and-add", pr)
		req.ContentLength = int64(len(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{code: resp.StatusCode, body: b}
	}()
	pw.Write(body[:len(body)/2])
	time.Sleep(200 * time.Millisecond)
	srv.cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	pw.Write(body[len(body)/2:])
	pw.Close()
	got := <-res
	if got.err != nil || got.code != 200 || bytes.Count(got.body, []byte(`"added":true`)) != 50 {
		t.Fatalf("in-flight request: %d %v %.200s", got.code, got.err, got.body)
	}
	if err := srv.wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, srv.stderr)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.Len() != 50 {
		t.Errorf("after shutdown the index holds %d documents, want 50", st.Len())
	}
}

// TestDebugServerTimeouts checks that the --debug-addr listener bounds
// every phase of a connection, not only the headers.
func TestDebugServerTimeouts(t *testing.T) {
	ds := newDebugServer()
	if ds.ReadHeaderTimeout <= 0 || ds.ReadTimeout <= 0 || ds.WriteTimeout <= 0 || ds.IdleTimeout <= 0 {
		t.Errorf("debug server timeouts: header %v, read %v, write %v, idle %v: all must be set",
			ds.ReadHeaderTimeout, ds.ReadTimeout, ds.WriteTimeout, ds.IdleTimeout)
	}
	if ds.WriteTimeout <= maxProfileSeconds*time.Second {
		t.Errorf("WriteTimeout %v leaves no time for a %d s profile", ds.WriteTimeout, maxProfileSeconds)
	}
}

// ackDoc is a document sent by an ackLoad.
type ackDoc struct{ ID, Text string }

// ackLoad drives a server with writes from several clients and records
// every document the server acknowledged as added, until killAfter.
type ackLoad struct {
	mu    sync.Mutex
	acked map[string]string // id -> text
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startAckLoad starts clients goroutines posting to addr: client g's
// request i is next(g, i, r), a path and its documents (one document is
// sent as {"id", "text"}, several as a batch {"documents": [...]}); r is
// the client's own generator, seeded with seed. The answer's "added" (or
// each result's, for a batch) marks a document acknowledged. A request
// that fails in transport ends its client (the server is gone); any other
// answer than 2xx fails the test.
func startAckLoad(t *testing.T, addr string, clients int, seed uint64, next func(g, i int, r *rand.Rand) (string, []ackDoc)) *ackLoad {
	l := &ackLoad{acked: map[string]string{}, stop: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second}
	for g := range clients {
		l.wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), seed))
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				path, docs := next(g, i, r)
				var body []byte
				if len(docs) == 1 {
					body, _ = json.Marshal(map[string]string{"id": docs[0].ID, "text": docs[0].Text})
				} else {
					ds := make([]map[string]string, len(docs))
					for j, d := range docs {
						ds[j] = map[string]string{"id": d.ID, "text": d.Text}
					}
					body, _ = json.Marshal(map[string]any{"documents": ds})
				}
				resp, err := client.Post(addr+path, "application/json", bytes.NewReader(body))
				if err != nil {
					return // the server is gone
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					return
				}
				var out struct {
					Added   bool `json:"added"`
					Results []struct {
						Added bool `json:"added"`
					} `json:"results"`
				}
				if resp.StatusCode/100 != 2 || json.Unmarshal(b, &out) != nil {
					t.Errorf("%s: %d %s", path, resp.StatusCode, b)
					return
				}
				l.mu.Lock()
				if out.Results == nil && out.Added {
					l.acked[docs[0].ID] = docs[0].Text
				}
				for j, res := range out.Results {
					if res.Added {
						l.acked[docs[j].ID] = docs[j].Text
					}
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// killAfter kills c with SIGKILL once want documents are acknowledged (or
// after 5 s), stops and waits for the clients, fails the test when fewer
// than 50 were acknowledged, and returns the acknowledged documents.
func (l *ackLoad) killAfter(t *testing.T, c *child, want int) map[string]string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		n := len(l.acked)
		l.mu.Unlock()
		if n >= want {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.wait()
	close(l.stop)
	l.wg.Wait()
	if len(l.acked) < 50 {
		t.Fatalf("only %d adds acknowledged before the kill", len(l.acked))
	}
	return l.acked
}

// TestServeTLS: serve --tls-cert --tls-key answers HTTPS (TLS 1.2 or
// later) to a client that trusts the certificate, refuses TLS 1.1 and
// plain HTTP, and --tls-cert alone is a usage error (issue 32 item 7).
func TestServeTLS(t *testing.T) {
	cert, key := testcert.Write(t, t.TempDir())
	dir := createIndex(t)
	srv := startServer(t, "--index", dir, "--tls-cert", cert, "--tls-key", key)
	// The server writes its address file, which startServer waits for,
	// before the line that names the scheme: wait for the line too.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(srv.stderr.String(), "on https://") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(srv.stderr.String(), "on https://") {
		t.Errorf("stderr does not say https:\n%s", srv.stderr)
	}
	addr := strings.TrimPrefix(srv.addr, "http://")
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Post("https://"+addr+"/v1/check-and-add", "application/json", strings.NewReader(`{"id":"a","text":"a document sent over TLS"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 || resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Errorf("HTTPS check-and-add = %d %s (TLS %v)", resp.StatusCode, b, resp.TLS)
	}
	// A client that offers h2 gets HTTP/2 (docs/server.md says so).
	h2 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	if resp, err := h2.Get("https://" + addr + "/healthz"); err != nil {
		t.Errorf("HTTPS with h2 offered: %v", err)
	} else {
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("HTTPS with h2 offered: %s, want HTTP/2", resp.Proto)
		}
	}
	old := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11}}}
	if _, err := old.Get("https://" + addr + "/healthz"); err == nil {
		t.Error("a TLS 1.1 client was served")
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		if resp.StatusCode == 200 {
			t.Error("plain HTTP was served on the TLS port")
		}
		resp.Body.Close()
	}
	// The plain-HTTP client is logged in serve's words, not Go's. (The
	// TLS 1.1 client above never gets to a handshake: Go's client refuses
	// a MaxVersion under its own MinVersion, TLS 1.2.)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(srv.stderr.String(), "sent plain HTTP") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if e := srv.stderr.String(); !strings.Contains(e, "sent plain HTTP to this HTTPS server") || strings.Contains(e, "http: TLS handshake error") {
		t.Errorf("stderr after a plain HTTP client:\n%s", e)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"serve", "--index", dir, "--tls-cert", cert}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--tls-key") {
		t.Errorf("--tls-cert alone: exit %d, %s; want 2 naming --tls-key", code, errb.String())
	}
}

// TestHTTPLog: the HTTP server's connection-level lines are serve's own:
// a plain-HTTP client on the HTTPS port is named as such, a handshake the
// client closed is not logged, other lines keep their words under
// "neardup:", and a flood of failed handshakes is cut to the burst and one
// a second, the dropped ones counted into the next line.
func TestHTTPLog(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h := &httpLog{out: log.New(&buf, "", 0), tokens: handshakeBurst, now: func() time.Time { return now }}
	lg := log.New(h, "", 0)
	lg.Printf("http: TLS handshake error from 10.0.0.1:5000: client sent an HTTP request to an HTTPS server")
	lg.Printf("http: TLS handshake error from 10.0.0.2:5000: EOF")
	lg.Printf("http: TLS handshake error from 10.0.0.3:5000: read tcp 1.2.3.4:443->10.0.0.3:5000: read: connection reset by peer")
	lg.Printf("http: TLS handshake error from 10.0.0.4:5000: tls: client offered only unsupported versions: [302 301]")
	lg.Printf("http: Accept error: too many open files; retrying in 5ms")
	want := "neardup: 10.0.0.1:5000 sent plain HTTP to this HTTPS server (answered 400): the client must use https://\n" +
		"neardup: TLS handshake with 10.0.0.4:5000 failed: tls: client offered only unsupported versions: [302 301]\n" +
		"neardup: Accept error: too many open files; retrying in 5ms\n"
	if buf.String() != want {
		t.Fatalf("log:\n%s\nwant:\n%s", buf.String(), want)
	}
	buf.Reset()
	for i := range 100 {
		lg.Printf("http: TLS handshake error from 10.0.0.9:%d: tls: first record does not look like a TLS handshake", i)
	}
	if n := strings.Count(buf.String(), "\n"); n != handshakeBurst-2 {
		t.Errorf("a flood of 100 failed handshakes wrote %d lines, want %d (the burst less the two before):\n%s", n, handshakeBurst-2, buf.String())
	}
	buf.Reset()
	now = now.Add(1500 * time.Millisecond)
	lg.Printf("http: TLS handshake error from 10.0.0.9:7: tls: first record does not look like a TLS handshake")
	lg.Printf("http: TLS handshake error from 10.0.0.9:8: tls: first record does not look like a TLS handshake")
	if want := "neardup: TLS handshake with 10.0.0.9:7 failed: tls: first record does not look like a TLS handshake (and 92 more failed handshakes not logged before it)\n"; buf.String() != want {
		t.Errorf("after 1.5 s:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// TestServeShutdownTimeout stops a server (SIGTERM) while a request is
// still running, its body half sent, past --shutdown-timeout: the request
// is cut off, the index flushed and closed, and serve exits 1 naming
// --shutdown-timeout (it exited 130 with "shutdown: context deadline
// exceeded", as if interrupted).
func TestServeShutdownTimeout(t *testing.T) {
	dir := createIndex(t)
	srv := startServer(t, "--index", dir, "--shutdown-timeout", "300ms")
	body := []byte(`{"text": "a document whose body never arrives whole"}`)
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.addr+"/v1/check", pr)
		req.ContentLength = int64(len(body))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	pw.Write(body[:10])
	// The request is being served once its declared body is counted in
	// flight (admission reserves it before reading a byte).
	want := fmt.Sprintf("neardup_http_request_bytes_in_flight %d\n", len(body))
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatalf("the request was not served within 30 s\n%s", srv.stderr)
		}
		resp, err := http.Get(srv.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(b, []byte(want)) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	err := srv.wait()
	msg := srv.stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve stopped past --shutdown-timeout: %v, want exit 1:\n%s", err, msg)
	}
	wantMsg := "index " + dir + " flushed and closed\nneardup: --shutdown-timeout 300ms passed with requests still running: they were cut off without an answer (a write among them may or may not have been applied); a longer --shutdown-timeout lets them finish\n"
	if !strings.HasSuffix(msg, wantMsg) {
		t.Errorf("serve stopped past --shutdown-timeout ends\n%s\nwant it to end\n%s", msg, wantMsg)
	}
	// The client's writer waits for the rest of the body: end it.
	pw.Close()
	if err := <-done; err == nil {
		t.Error("the request cut off got an answer")
	}
}
