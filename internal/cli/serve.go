package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/sharedflags"
	"github.com/neardup/neardup/server"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

type serveOpts struct {
	dir             string
	addr            string
	addrFile        string
	tokenFile       string
	cacheMB         int
	minFreeMB       int
	maxBody         int64
	maxInflight     int64
	maxConcurrent   int
	maxDoc          int
	maxBatch        int
	limit           int
	timeout         time.Duration
	shutdownTimeout time.Duration
	debugAddr       string
	tlsCert         string
	tlsKey          string
}

func newServeCmd() *cobra.Command {
	o := &serveOpts{}
	cmd := &cobra.Command{
		Use:   "serve --index DIR|URL [--addr 127.0.0.1:8080]",
		Short: "Serve a persistent index over HTTP",
		Long: `Serve the index in DIR, or in Redis (a redis:// or redis+cluster:// URL, shared
with other serve processes: docs/format/redis.md), made by 'neardup index
create', as a JSON HTTP API:

  POST /v1/check                {"text"}             is it a near-duplicate, of what, how similar
  POST /v1/add                  {"id","text"}        add without checking
  POST /v1/check-and-add        {"id","text"}        add unless it is a near-duplicate (atomic)
  POST /v1/batch/check          {"documents":[...]}  the same for many documents
  POST /v1/batch/add            {"documents":[...]}
  POST /v1/batch/check-and-add  {"documents":[...]}
  POST /v1/remove               {"ids":[...]}
  GET|DELETE /v1/docs/{id}
  GET  /v1/stats, /healthz, /metrics (Prometheus text format)

Documented in docs/server.md. The server listens on loopback unless --addr
says otherwise. With --token-file every request but /healthz needs the header
"Authorization: Bearer TOKEN". An acknowledged add is on disk (the
write-ahead log is synced first). When less than --min-free-mb is free on
the index's disk, writes get 507 and /healthz says "degraded" until space is
freed; checks go on. Beyond --max-concurrent requests or --max-inflight-bytes
of bodies in flight, requests get 503 with Retry-After (docs/reliability.md).
SIGINT or SIGTERM stops accepting
connections, finishes the requests in flight, flushes and closes the index,
and exits 0; requests still running after --shutdown-timeout are cut off
and it exits 1.

` + exitHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), cmd, o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.dir, "index", "", indexFlagHelp)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&o.addrFile, "addr-file", "", "write the address listened on to this file once listening")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the bearer token that requests must carry")
	fs.IntVar(&o.cacheMB, "cache-mb", store.DefaultCacheSize>>20, "block cache size in MiB: with the memtables it bounds the index's memory apart from its in-memory postings (about 210 bytes per MinHash document, see /v1/stats)")
	minFreeFlag(fs, &o.minFreeMB, "writes get 507 (and /healthz says \"degraded\")")
	fs.Int64Var(&o.maxBody, "max-body-bytes", server.DefaultMaxBodyBytes, "largest request body")
	fs.Int64Var(&o.maxInflight, "max-inflight-bytes", 0, "most request body bytes served at once (a batch write counts its encoded documents where they outgrow its body); beyond it, after a short wait, 503 with Retry-After (0: 1/64 of the machine's memory, at most 128 MiB, at least --max-body-bytes; a request holds about twice its body and the garbage collector doubles that, so the requests in flight then use about 1/16 of the memory)")
	fs.IntVar(&o.maxConcurrent, "max-concurrent", server.DefaultMaxConcurrent, "most requests served at once (apart from /healthz and /metrics); beyond it, after a short wait, 503 with Retry-After")
	fs.IntVar(&o.maxDoc, "max-doc-bytes", server.DefaultMaxDocBytes, "largest document text")
	fs.IntVar(&o.maxBatch, "max-batch", server.DefaultMaxBatch, "most documents or ids in one batch request")
	fs.IntVar(&o.limit, "limit", server.DefaultLimit, "matches returned per document when a request does not say")
	fs.DurationVar(&o.timeout, "timeout", server.DefaultTimeout, "time limit of one request")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long SIGINT or SIGTERM waits for requests in flight; requests still running then are cut off without an answer and serve exits 1")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS (TLS 1.2 or later) with this PEM certificate (chain); needs --tls-key")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the PEM private key of --tls-cert")
	fs.StringVar(&o.debugAddr, "debug-addr", "", "also serve Go's profiler (net/http/pprof, /debug/pprof/) on this address, for benchmarks; keep it on loopback")
	return cmd
}

// newDebugServer returns the server of --debug-addr: the profiler, with
// timeouts on every phase of a connection so that slow or idle clients
// cannot hold connections open. Writes may take as long as the longest
// CPU profile (?seconds=, at most maxProfileSeconds).
func newDebugServer() *http.Server {
	dmux := http.NewServeMux()
	dmux.HandleFunc("/debug/pprof/", pprof.Index)
	dmux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	return &http.Server{
		Handler:           dmux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      (maxProfileSeconds + 10) * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// maxProfileSeconds is the longest CPU profile the debug server can take:
// net/http/pprof refuses a longer one than the WriteTimeout allows.
const maxProfileSeconds = 120

func runServe(ctx context.Context, cmd *cobra.Command, o *serveOpts) error {
	if o.dir == "" {
		return usageErr("--index DIR|URL is required")
	}
	for _, c := range []struct {
		flag string
		bad  bool
	}{
		{"cache-mb", o.cacheMB < 1}, {"min-free-mb", o.minFreeMB < 1}, {"max-concurrent", o.maxConcurrent < 1},
		{"max-body-bytes", o.maxBody < 1}, {"max-doc-bytes", o.maxDoc < 1}, {"max-batch", o.maxBatch < 1},
		{"timeout", o.timeout <= 0}, {"shutdown-timeout", o.shutdownTimeout <= 0},
	} {
		if c.bad {
			return usageErr("--%s %s: must be positive", c.flag, cmd.Flags().Lookup(c.flag).Value)
		}
	}
	if o.limit < 0 {
		return usageErr("--limit %d: must be 0 (every match) or more", o.limit)
	}
	if o.maxInflight == 0 {
		o.maxInflight = server.DefaultInflightBytes(o.maxBody)
	}
	if o.maxInflight < o.maxBody {
		return usageErr("--max-inflight-bytes %d is below --max-body-bytes %d: the largest request could never be served", o.maxInflight, o.maxBody)
	}
	var token string
	if o.tokenFile != "" {
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return usageErr("--token-file: %v", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return usageErr("--token-file %s is empty", o.tokenFile)
		}
	}
	var tlsConf *tls.Config
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usageErr("--tls-cert and --tls-key go together")
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return usageErr("--tls-cert %s, --tls-key %s: %v", o.tlsCert, o.tlsKey, err)
		}
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return usageErr("--addr %q: %v", o.addr, err)
	}
	// Refused before the index is opened (it was written after, its
	// error naming no flag).
	if err := checkOutputPath("--addr-file", o.addrFile); err != nil {
		return err
	}
	// A folder removed while the server runs ends it, exit 1, in the
	// words /healthz gives, should pebble fail first (fatalWatch).
	fatal := newFatalWatch(cmd.ErrOrStderr(), o.dir, "the documents added since the server started are lost")
	st, err := openIndexAt(o.dir, store.Options{CacheSize: int64(o.cacheMB) << 20, MinFreeBytes: int64(o.minFreeMB) << 20, MemTableSize: testMemTableSize.Load(), OnFatal: fatal.onFatal})
	if err != nil {
		return err
	}
	// Closed on every return but one: requests still running past the
	// wait for them after --shutdown-timeout, which the index is left
	// open for (closed once they end).
	leaveOpen := false
	defer func() {
		if !leaveOpen {
			st.Close()
		}
	}()
	fatal.folder.Store(watchIndexFolder(o.dir))
	srv, err := server.New(st, server.Config{MaxBodyBytes: o.maxBody, MaxDocBytes: o.maxDoc, MaxBatch: o.maxBatch,
		Timeout: o.timeout, Token: token, Limit: o.limit, MaxConcurrent: o.maxConcurrent, MaxInflightBytes: o.maxInflight, ErrorLog: log.New(cmd.ErrOrStderr(), "", log.LstdFlags)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		// A port out of range or a host that does not resolve is the
		// flag's mistake (exit 2); a port in use is the run's (exit 1).
		// Either names the flag.
		var ae *net.AddrError
		var de *net.DNSError
		if errors.As(err, &ae) || errors.As(err, &de) {
			return usageErr("--addr %q: %v", o.addr, err)
		}
		return fmt.Errorf("--addr %s: %w", o.addr, err)
	}
	stderr := cmd.ErrOrStderr()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && token == "" {
		fmt.Fprintf(stderr, "neardup: warning: listening on %s without --token-file: anyone who can reach it can change the index\n", ln.Addr())
	}
	if w := extractionWarning("--index", o.dir, st); w != "" {
		fmt.Fprintln(stderr, w)
	}
	handler := srv.Handler()
	if h := testHookServeHandler.Load(); h != nil {
		handler = (*h)(o.dir, handler)
	}
	var running handlers
	hs := &http.Server{
		Handler:           running.wrap(handler),
		ReadHeaderTimeout: min(10*time.Second, o.timeout),
		ReadTimeout:       o.timeout,
		WriteTimeout:      o.timeout + 5*time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		TLSConfig:         tlsConf,
		ErrorLog:          newHTTPLog(stderr),
	}
	if o.debugAddr != "" {
		dln, err := net.Listen("tcp", o.debugAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("--debug-addr: %w", err)
		}
		ds := newDebugServer()
		go ds.Serve(dln)
		defer ds.Close()
		fmt.Fprintf(stderr, "profiler on http://%s/debug/pprof/\n", dln.Addr())
	}
	if err := st.Health(); errors.Is(err, store.ErrDiskFull) {
		fmt.Fprintf(stderr, "neardup: warning: %s; writes get 507 (--min-free-mb sets the reserve)\n", sharedflags.Plain(err))
	}
	if ss, err := st.Stats(); err == nil {
		if warn := store.DurabilityWarning(ss.RedisDurability); ss.Backend == "redis" && warn != "" {
			fmt.Fprintf(stderr, "neardup: warning: %s\n", warn)
		}
		if ss.Spec.Method == sketch.MinHash && !ss.Sets {
			fmt.Fprintf(stderr, "neardup: note: the index keeps no shingle sets: candidates are decided by the MinHash estimate alone, less precisely near the threshold than 'neardup dedup' ('neardup index upgrade' adds the sets)\n")
		}
	}
	p := st.Spec()
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	fmt.Fprintf(stderr, "serving %s index %s (%d documents; %s) on %s://%s\n", p.Method, redactLoc(o.dir), st.Len(), describeParams(p), scheme, ln.Addr())
	// The address file, written whole (atomically) once every line of
	// the start is on standard error: a script that waits for it reads
	// the whole address, and the warnings before it.
	if o.addrFile != "" {
		if err := writeAddrFile(o.addrFile, ln.Addr().String()); err != nil {
			ln.Close()
			return err
		}
	}
	errc := make(chan error, 1)
	go func() {
		if tlsConf != nil {
			errc <- hs.ServeTLS(ln, "", "") // the certificate is in TLSConfig
			return
		}
		errc <- hs.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "shutting down: finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	serr := hs.Shutdown(sctx)
	if serr != nil {
		// --shutdown-timeout passed with requests still running: cut
		// their connections, so that their clients see the failure
		// now rather than when the process ends. That cancels their
		// contexts too, but a handler goes on to its next check of
		// it (a batch between chunks) or to its end (one document):
		// the index is closed once they are done, after a bounded
		// wait, never under them.
		hs.Close()
	}
	<-errc
	if serr != nil {
		grace := min(o.shutdownTimeout, maxShutdownGrace)
		idle := running.idle()
		select {
		case <-idle:
		case <-time.After(grace):
			// Left open: the process ends before they do (a write
			// acknowledged is in the write-ahead log, which the next
			// start replays); a program that runs serve in its own
			// process (a test, an embedding) has it closed once they
			// end.
			leaveOpen = true
			n := running.count()
			go func() {
				<-idle
				err := st.Close()
				if h := testHookServeClosedLate.Load(); h != nil {
					(*h)(o.dir, err)
				}
			}()
			return failedAfterSignal{&wordedErr{msg: fmt.Sprintf("--shutdown-timeout %s passed with requests still running: they were cut off without an answer (a write among them may or may not have been applied), and %s still ran %s later: the index was not closed under them (acknowledged documents are in its write-ahead log, which the next start replays); a longer --shutdown-timeout lets them finish", o.shutdownTimeout, plural(n, "request"), grace), err: serr}}
		}
	}
	// On a full disk Close leaves the memtables in the write-ahead log
	// (a flush could not succeed): say so rather than "flushed".
	full := errors.Is(st.Health(), store.ErrDiskFull)
	if err := st.Close(); err != nil {
		// The folder removed while the server ran (rm -rf) is worded
		// as index add and pebble's failure (fatalWatch) word it.
		// The signal asked for the stop: a close that fails then is
		// the run's failure (exit 1), not an interruption (130).
		if fo := fatal.folder.Load(); fo != nil && errors.Is(err, store.ErrGone) {
			return failedAfterSignal{fo.goneErr(*fatal.what.Load())}
		}
		return failedAfterSignal{&wordedErr{msg: fmt.Sprintf("--index %s: closing the index: %s", redactLoc(o.dir), sharedflags.Plain(err)), err: err}}
	}
	if full {
		fmt.Fprintf(stderr, "index %s closed without a flush (the disk is full): acknowledged documents are in its write-ahead log, which the next start replays\n", redactLoc(o.dir))
	} else {
		fmt.Fprintf(stderr, "index %s flushed and closed\n", redactLoc(o.dir))
	}
	// A shutdown that cut requests off did not end cleanly: exit 1,
	// as a failed close does, not 130 (the signal is serve's ordinary
	// end).
	if errors.Is(serr, context.DeadlineExceeded) {
		return failedAfterSignal{&wordedErr{msg: fmt.Sprintf("--shutdown-timeout %s passed with requests still running: they were cut off without an answer (a write among them may or may not have been applied); a longer --shutdown-timeout lets them finish", o.shutdownTimeout), err: serr}}
	}
	if serr != nil {
		return failedAfterSignal{fmt.Errorf("shutdown: %w", serr)}
	}
	return nil
}

// maxShutdownGrace bounds the wait, after --shutdown-timeout, for the
// handlers of the requests cut off to end before the index is closed:
// --shutdown-timeout, at most this.
const maxShutdownGrace = 5 * time.Second

// testHookServeHandler, when set by a test, wraps the handler of the
// server of --index loc. testHookServeClosedLate is given the close of an
// index left open past the shutdown's wait, once its last request ends.
var (
	testHookServeHandler    atomic.Pointer[func(loc string, h http.Handler) http.Handler]
	testHookServeClosedLate atomic.Pointer[func(loc string, err error)]
)

// handlers counts the requests whose handler runs, so that serve closes
// the index only once none does. The zero value is ready.
type handlers struct {
	mu   sync.Mutex
	n    int
	wait chan struct{} // closed when n falls to 0, once idle is called
}

// wrap counts h's calls.
func (hs *handlers) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		hs.n++
		hs.mu.Unlock()
		defer hs.done()
		h.ServeHTTP(w, r)
	})
}

func (hs *handlers) done() {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.n--; hs.n == 0 && hs.wait != nil {
		close(hs.wait)
		hs.wait = nil
	}
}

// idle returns a channel closed when no handler runs (at once if none
// does now). One caller at a time.
func (hs *handlers) idle() <-chan struct{} {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	c := make(chan struct{})
	if hs.n == 0 {
		close(c)
	} else {
		hs.wait = c
	}
	return c
}

// count is the number of handlers running.
func (hs *handlers) count() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.n
}

// writeAddrFile writes addr and a newline to path (--addr-file), atomically.
func writeAddrFile(path, addr string) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return outputErr("--addr-file", path, err)
	}
	defer f.Abort()
	if _, err := f.Write([]byte(addr + "\n")); err != nil {
		return fmt.Errorf("--addr-file %s: %w", path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("--addr-file %s: %w", path, err)
	}
	return nil
}

// failedAfterSignal is a failure of serve after the SIGINT or SIGTERM
// that stops it: the signal is serve's ordinary end (exit 0), so what
// fails then exits 1, not 130 as an interrupted command does.
type failedAfterSignal struct{ error }

func (e failedAfterSignal) Unwrap() error { return e.error }
