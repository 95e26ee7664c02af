// Package server is the JSON HTTP API of a persistent near-duplicate index
// (package store): check whether a document near-duplicates one already
// indexed, add documents, check-and-add in one atomic step, the same for
// many documents per request, remove, stats, health and Prometheus
// metrics. docs/server.md describes every route with examples.
//
// # Limits
//
// Request bodies are limited to Config.MaxBodyBytes (413 beyond), each
// document's text to Config.MaxDocBytes (413), a batch to Config.MaxBatch
// documents (413), and each request to Config.Timeout: a request whose
// deadline passes before its write starts fails with 503 and changes
// nothing; a write that has started completes and is reported. At most
// Config.MaxConcurrent requests are served at once, with bodies of at most
// Config.MaxInflightBytes in all (a batch write is charged its encoded
// records when they outgrow its body); beyond, after a short wait, 503
// with Retry-After, or 413 for a batch write whose records alone would
// pass the limit (see admit.go).
//
// # Errors
//
// Every error is a JSON object {"error": message} with a 4xx or 5xx
// status: 400 for malformed JSON, wrong types, a missing text or id, an
// invalid id; 401 without the bearer token when one is configured; 404 for
// unknown routes and unknown ids; 405 for a wrong method; 409 for an id
// already in the index; 413 for oversized bodies, documents and batches;
// 503 with Retry-After beyond the admission limits, after a failed write
// (until a restart) or past the timeout; 507 with Retry-After for a write
// on a full disk (store.ErrDiskFull), while checks go on. A 500 says only
// "internal error": its cause, which may name files, goes to
// Config.ErrorLog. Strings that are not valid UTF-8 are a 400 naming the
// field, never replaced by U+FFFD.
// A request that fails validation changes nothing: batches are validated
// as a whole before any document is written. Handlers never panic on input.
//
// # Concurrency
//
// A Server is safe for concurrent use; it keeps a pool of sketchers, one per
// request in flight. Atomicity of check-and-add comes from the store, which
// serialises writers. Shutdown is the http.Server's; close the store after
// it returns to flush the index.
package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/bits"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/store"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 32 << 20
	DefaultMaxDocBytes  = 1 << 20
	DefaultMaxBatch     = 10000
	DefaultTimeout      = 30 * time.Second
	DefaultLimit        = 10
)

// Config configures a Server. The zero value means the defaults.
type Config struct {
	// MaxBodyBytes limits a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxDocBytes limits one document's text; 0 means DefaultMaxDocBytes.
	MaxDocBytes int
	// MaxBatch limits the documents (or ids) of one batch request; 0 means
	// DefaultMaxBatch.
	MaxBatch int
	// Timeout limits the time of one request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Token, when not empty, is the bearer token every request but
	// /healthz must carry (Authorization: Bearer TOKEN).
	Token string
	// Limit is the number of matches returned per document when a request
	// does not say; 0 means DefaultLimit.
	Limit int
	// MaxConcurrent limits the requests served at once (not counting
	// /healthz and /metrics); 0 means DefaultMaxConcurrent.
	MaxConcurrent int
	// MaxInflightBytes limits the total size of the bodies of the
	// requests being served; 0 means DefaultInflightBytes(MaxBodyBytes).
	// It must be at least MaxBodyBytes.
	MaxInflightBytes int64
	// QueueWait is how long a request beyond MaxConcurrent or
	// MaxInflightBytes waits for room before it gets 503; 0 means
	// DefaultQueueWait.
	QueueWait time.Duration
	// ErrorLog receives the details of internal errors (5xx), which
	// responses leave out because they may name files; nil means
	// log.Default().
	ErrorLog *log.Logger
}

// Server serves one index.
type Server struct {
	st       store.Index
	cfg      Config
	mux      *http.ServeMux
	sketches sync.Pool
	met      *metrics
	adm      *admission
	// The handlers of GET and DELETE /v1/docs/{id} (see serveHTTP).
	getDoc, delDoc http.HandlerFunc
	// testHookAdmitted, set by tests, runs once a request has its slot.
	testHookAdmitted func(*http.Request)
}

// bodyKey is the context key of a request body read before admission: a
// *heldBody, which readBody empties as it takes the buffer.
type bodyKey struct{}

// chargeKey is the context key of a request's admission charge, a
// *charge (admit.go).
type chargeKey struct{}

// heldBody passes a body read by wrap to the handler's readBody. The
// request's context lives as long as the request: if it referred to the
// buffer itself, a body would stay in memory while its documents were
// sketched and queried (a 31 MiB batch: 31 MiB more for each request in
// flight), beyond what the admission limits count.
type heldBody struct{ buf *bytes.Buffer }

// New returns a Server for the index st with cfg.
func New(st store.Index, cfg Config) (*Server, error) {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxDocBytes == 0 {
		cfg.MaxDocBytes = DefaultMaxDocBytes
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Limit == 0 {
		cfg.Limit = DefaultLimit
	}
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = log.Default()
	}
	if cfg.MaxConcurrent == 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MaxInflightBytes == 0 {
		cfg.MaxInflightBytes = DefaultInflightBytes(cfg.MaxBodyBytes)
	}
	if cfg.QueueWait == 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxDocBytes < 0 || cfg.MaxBatch < 0 || cfg.Timeout < 0 || cfg.Limit < 0 ||
		cfg.MaxConcurrent < 0 || cfg.MaxInflightBytes < 0 || cfg.QueueWait < 0 {
		return nil, errors.New("server: limits must not be negative")
	}
	if cfg.MaxInflightBytes < cfg.MaxBodyBytes {
		return nil, fmt.Errorf("server: MaxInflightBytes %d is below MaxBodyBytes %d: the largest request could never be served", cfg.MaxInflightBytes, cfg.MaxBodyBytes)
	}
	if _, err := st.NewSketcher(); err != nil {
		return nil, err
	}
	s := &Server{st: st, cfg: cfg, mux: http.NewServeMux(), met: newMetrics(),
		adm: newAdmission(int64(cfg.MaxConcurrent), cfg.MaxInflightBytes, cfg.QueueWait)}
	s.sketches.New = func() any {
		sk, _ := st.NewSketcher() // checked above: the parameters are valid
		return sk
	}
	s.route("GET /healthz", "healthz", s.health)
	s.route("GET /metrics", "metrics", s.metrics)
	s.route("GET /v1/stats", "stats", s.stats)
	s.route("POST /v1/check", "check", s.check)
	s.route("POST /v1/add", "add", s.add)
	s.route("POST /v1/check-and-add", "check_and_add", s.checkAndAdd)
	s.route("POST /v1/batch/check", "batch_check", s.batchCheck)
	s.route("POST /v1/batch/add", "batch_add", s.batchAdd)
	s.route("POST /v1/batch/check-and-add", "batch_check_and_add", s.batchCheckAndAdd)
	s.route("POST /v1/remove", "remove", s.remove)
	s.getDoc, s.delDoc = s.wrap("get", s.get), s.wrap("delete", s.del)
	s.mux.HandleFunc("GET /v1/docs/{id}", s.getDoc)
	s.mux.HandleFunc("DELETE /v1/docs/{id}", s.delDoc)
	s.mux.HandleFunc("/", s.wrap("unknown", s.notFound))
	return s, nil
}

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

// serveHTTP is the mux, but for GET and DELETE /v1/docs/ID, whose ID is
// the whole rest of the path, unescaped: the mux's {id} is one segment, so
// that an id with a slash (bbc-news's "business/001") was "no route"
// unless written %2F, and it cleans /v1/docs/. and /v1/docs/.. (also
// written %2E) into other paths and redirects, so that such a document,
// which add accepts, could not be read or deleted.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/v1/docs/"); ok && rest != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete) {
		if id, err := url.PathUnescape(rest); err == nil {
			r.SetPathValue("id", id)
			if r.Method != http.MethodDelete {
				s.getDoc(w, r) // HEAD too, as the mux's GET pattern takes it
			} else {
				s.delDoc(w, r)
			}
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

var knownPaths = map[string]string{
	"/healthz": "GET", "/metrics": "GET", "/v1/stats": "GET",
	"/v1/check": "POST", "/v1/add": "POST", "/v1/check-and-add": "POST",
	"/v1/batch/check": "POST", "/v1/batch/add": "POST", "/v1/batch/check-and-add": "POST",
	"/v1/remove": "POST",
}

func (s *Server) route(pattern, name string, h func(http.ResponseWriter, *http.Request) error) {
	s.mux.HandleFunc(pattern, s.wrap(name, h))
}

// httpError is an error with a status code, and the Retry-After of its
// answer when not empty.
type httpError struct {
	code       int
	msg        string
	retryAfter string
}

func (e *httpError) Error() string { return e.msg }

func errorf(code int, format string, args ...any) error {
	return &httpError{code: code, msg: fmt.Sprintf(format, args...)}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// wrap adds authentication, the body limit, the timeout, error replies,
// panic safety and metrics to a handler.
func (s *Server) wrap(name string, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.met.inflight.Add(1)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				if sw.code == 0 {
					s.cfg.ErrorLog.Printf("neardup: %s %s: panic: %v", r.Method, r.URL.Path, p)
					s.writeError(sw, r, errorf(http.StatusInternalServerError, "internal error"))
				}
			}
			s.met.inflight.Add(-1)
			s.met.observe(name, sw.code, time.Since(start))
		}()
		if s.cfg.Token != "" && name != "healthz" && !s.authorized(r) {
			sw.Header().Set("WWW-Authenticate", `Bearer realm="neardup"`)
			s.writeError(sw, r, errorf(http.StatusUnauthorized, "missing or wrong bearer token"))
			return
		}
		if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") && r.ContentLength != 0 {
			// A compressed body would be read as malformed JSON
			// ("invalid character '\x1f'"): say what is wrong.
			s.writeError(sw, r, errorf(http.StatusUnsupportedMediaType, "request bodies with Content-Encoding %q are not read: send the JSON uncompressed", ce))
			return
		}
		if r.ContentLength > s.cfg.MaxBodyBytes {
			// Refused before a byte of the body is read or any room taken.
			s.writeError(sw, r, &http.MaxBytesError{Limit: s.cfg.MaxBodyBytes})
			return
		}
		r.Body = http.MaxBytesReader(sw, r.Body, s.cfg.MaxBodyBytes)
		ctx := r.Context()
		if name != "healthz" && name != "metrics" {
			// Room for the body first, then the body, then a slot: a
			// slow sender holds no slot (admit.go).
			ch, err := s.adm.admitBytes(ctx, r, s.cfg.MaxBodyBytes)
			if err != nil {
				sw.Header().Set("Retry-After", retryAfterBusy)
				s.writeError(sw, r, err)
				return
			}
			defer ch.release()
			ctx = context.WithValue(ctx, chargeKey{}, ch)
			if r.Method == http.MethodPost {
				buf, err := readBody(r)
				if err != nil {
					s.writeError(sw, r, err)
					return
				}
				ctx = context.WithValue(ctx, bodyKey{}, &heldBody{buf})
			}
			releaseSlot, err := s.adm.admitSlot(ctx)
			if err != nil {
				if buf := takeBody(ctx); buf != nil {
					putBody(buf)
				}
				sw.Header().Set("Retry-After", retryAfterBusy)
				s.writeError(sw, r, err)
				return
			}
			defer releaseSlot()
			if s.testHookAdmitted != nil {
				s.testHookAdmitted(r.WithContext(ctx))
			}
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		if err := h(sw, r.WithContext(ctx)); err != nil {
			s.writeError(sw, r, err)
		}
	}
}

func (s *Server) authorized(r *http.Request) bool {
	// The scheme is case-insensitive (RFC 9110, section 11.1), one or
	// more spaces follow it.
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimLeft(tok, " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) == 1
}

// writeError answers err. The message of an unexpected error (a 500) is
// logged, not sent: it may carry a file name of the index.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	msg := "internal error (details in the server's log)"
	var he *httpError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &he):
		code, msg = he.code, he.msg
		if he.retryAfter != "" {
			w.Header().Set("Retry-After", he.retryAfter)
		}
	case errors.As(err, &mb):
		code, msg = http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes (the server's --max-body-bytes)", mb.Limit)
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = http.StatusServiceUnavailable, "request timed out before it was served; nothing was changed"
	case errors.Is(err, context.Canceled):
		code, msg = 499, "request canceled; nothing was changed"
	case errors.Is(err, store.ErrDuplicateID):
		code, msg = http.StatusConflict, clientMessage(err)
	case errors.Is(err, store.ErrNotFound):
		code, msg = http.StatusNotFound, clientMessage(err)
	case errors.Is(err, store.ErrInvalidID), errors.Is(err, store.ErrIncompatible):
		code, msg = http.StatusBadRequest, clientMessage(err)
	case errors.Is(err, store.ErrClosed):
		code, msg = http.StatusServiceUnavailable, "the index is closed"
	case errors.Is(err, store.ErrOpenedFull):
		// Opened read-only on a full disk: freeing space is not enough.
		code, msg = http.StatusInsufficientStorage, "the index's disk was full when the server started, so the index was opened read-only: free space and restart the server to write again; nothing was changed"
		w.Header().Set("Retry-After", retryAfterFull)
		s.met.diskFull.Add(1)
	case errors.Is(err, store.ErrDiskFull):
		// Refused before anything was written; checks go on.
		code, msg = http.StatusInsufficientStorage, "the index's disk is full (less free space than the server's --min-free-mb): writes are refused until space is freed; nothing was changed"
		w.Header().Set("Retry-After", retryAfterFull)
		s.met.diskFull.Add(1)
	case errors.Is(err, store.ErrFailed):
		code, msg = http.StatusServiceUnavailable, "a write to the index failed: writes are refused until the server is restarted; acknowledged documents are safe"
	case errors.Is(err, store.ErrUnreachable):
		// The request may or may not have reached Redis: a retry is safe
		// (a document added before reports itself as its duplicate).
		code, msg = http.StatusServiceUnavailable, "the index's Redis server does not answer: retry; acknowledged documents are safe"
		w.Header().Set("Retry-After", "1")
	}
	if code >= 500 && code != http.StatusServiceUnavailable && code != http.StatusInsufficientStorage || errors.Is(err, store.ErrFailed) {
		s.cfg.ErrorLog.Printf("neardup: %s %s: %d: %v", r.Method, r.URL.Path, code, err)
	}
	writeJSON(w, code, map[string]string{"error": msg})
}

// clientMessage is err's message for a client, without the Go package
// prefixes ("store: ") that mean nothing outside the code.
func clientMessage(err error) string {
	return strings.ReplaceAll(err.Error(), "store: ", "")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	if m, ok := knownPaths[r.URL.Path]; ok {
		allow := m
		if m == "GET" {
			allow = "GET, HEAD" // the router answers HEAD wherever it answers GET
		}
		w.Header().Set("Allow", allow)
		return errorf(http.StatusMethodNotAllowed, "%s %s: method not allowed (use %s)", r.Method, r.URL.Path, m)
	}
	if strings.HasPrefix(r.URL.Path, "/v1/docs/") && r.Method != http.MethodGet && r.Method != http.MethodDelete {
		w.Header().Set("Allow", "GET, HEAD, DELETE")
		return errorf(http.StatusMethodNotAllowed, "%s %s: method not allowed (use GET or DELETE)", r.Method, r.URL.Path)
	}
	return errorf(http.StatusNotFound, "no route %s %s", r.Method, r.URL.Path)
}

// decodeBody decodes the request body b, exactly one JSON value, into v,
// refusing strings that are not valid Unicode (see checkStrings).
func decodeBody(b []byte, v any) error {
	if err := checkStrings(b); err != nil {
		return err
	}
	return decodeJSON(bytes.NewReader(b), v, b)
}

// decodeFrom reads exactly one JSON value from rd into v, with encoding/json:
// the reference decoder, and the one that words the errors.
func decodeFrom(rd io.Reader, v any) error { return decodeJSON(rd, v, nil) }

// decodeJSON is decodeFrom; body, when not nil, is what rd reads, for
// naming the array element of a wrong type (documents[3].text, where
// encoding/json says documents.text).
func decodeJSON(rd io.Reader, v any, body []byte) error {
	dec := json.NewDecoder(rd)
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &mb):
			return err
		case errors.As(err, &te):
			field := strings.TrimPrefix(te.Field, "docIn.")
			if field == "" {
				field = "the body"
			}
			if at := jsonPathAt(body, te.Offset); body != nil && strings.Contains(at, "[") {
				field = at
			}
			kind, got := jsonKind(te.Type.Kind().String()), te.Value
			if strings.HasPrefix(kind, "a whole number") {
				// A fraction or a number too large for an int: encoding/json
				// says "number 1.5", and "must be a number, not number 1.5"
				// reads as a contradiction.
				got = strings.TrimPrefix(got, "number ")
			}
			return errorf(http.StatusBadRequest, "malformed request: %s must be %s, not %s", field, kind, got)
		case errors.As(err, &se):
			return errorf(http.StatusBadRequest, "malformed JSON at byte %d: %v", se.Offset, err)
		case errors.Is(err, io.EOF):
			return errorf(http.StatusBadRequest, "empty request body: expected a JSON object")
		}
		return errorf(http.StatusBadRequest, "malformed JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return err
		}
		return errorf(http.StatusBadRequest, "malformed request: data after the JSON object")
	}
	return nil
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int64":
		return "a whole number from 0 to 9223372036854775807"
	case "uint64", "float64":
		return "a number"
	}
	return k
}

// docIn is one document of a request.
type docIn struct {
	ID   *string `json:"id"`
	Text *string `json:"text"`
}

type docRequest struct {
	docIn
	Limit *int `json:"limit"`
}

type batchRequest struct {
	Documents *[]docIn `json:"documents"`
	Limit     *int     `json:"limit"`
}

// docLimitFor is a --max-doc-bytes of serve that admits a text of n
// bytes: the power of two at or above n, as the CLI's hint for a record
// over its --max-doc-bytes suggests.
func docLimitFor(n int) int { return 1 << bits.Len(uint(n-1)) }

// validate checks one document; where names it in messages.
func (s *Server) validate(d *docIn, where string, needID bool) error {
	if d.Text == nil {
		return errorf(http.StatusBadRequest, "%smissing \"text\"", where)
	}
	if len(*d.Text) > s.cfg.MaxDocBytes {
		n := len(*d.Text)
		return errorf(http.StatusRequestEntityTooLarge, "%stext of %s bytes, more than the server's --max-doc-bytes (%s bytes); a server started with --max-doc-bytes %d admits it", where, human.Number(n), human.Number(s.cfg.MaxDocBytes), docLimitFor(n))
	}
	if !utf8.ValidString(*d.Text) {
		return errorf(http.StatusBadRequest, "%stext is not valid UTF-8", where)
	}
	if d.ID == nil {
		if needID {
			return errorf(http.StatusBadRequest, "%smissing \"id\"", where)
		}
		return nil
	}
	switch id := *d.ID; {
	case id == "":
		return errorf(http.StatusBadRequest, "%sempty \"id\"", where)
	case len(id) > store.MaxIDBytes:
		return errorf(http.StatusBadRequest, "%sid of %d bytes, at most %d", where, len(id), store.MaxIDBytes)
	case !utf8.ValidString(id):
		return errorf(http.StatusBadRequest, "%sid is not valid UTF-8", where)
	}
	return nil
}

func (s *Server) limit(l *int) (int, error) {
	if l == nil {
		return s.cfg.Limit, nil
	}
	if *l < 0 {
		return 0, errorf(http.StatusBadRequest, "\"limit\" must not be negative")
	}
	return *l, nil
}

func (s *Server) readDoc(r *http.Request, needID bool) (docIn, int, error) {
	var req docRequest
	buf, err := readBody(r)
	if err != nil {
		return docIn{}, 0, err
	}
	if !fastDoc(buf.Bytes(), &req) {
		err = decodeBody(buf.Bytes(), &req)
	}
	putBody(buf)
	if err != nil {
		return docIn{}, 0, err
	}
	if err := s.validate(&req.docIn, "", needID); err != nil {
		return docIn{}, 0, err
	}
	lim, err := s.limit(req.Limit)
	return req.docIn, lim, err
}

func (s *Server) readBatch(r *http.Request, needID bool) ([]docIn, int, error) {
	var req batchRequest
	buf, err := readBody(r)
	if err != nil {
		return nil, 0, err
	}
	if !fastBatch(buf.Bytes(), &req) {
		err = decodeBody(buf.Bytes(), &req)
	}
	putBody(buf)
	if err != nil {
		return nil, 0, err
	}
	if req.Documents == nil {
		return nil, 0, errorf(http.StatusBadRequest, "missing \"documents\" (an array of {\"id\", \"text\"})")
	}
	docs := *req.Documents
	if len(docs) > s.cfg.MaxBatch {
		return nil, 0, errorf(http.StatusRequestEntityTooLarge, "%d documents in one batch, at most %d (the server's --max-batch)", len(docs), s.cfg.MaxBatch)
	}
	for i := range docs {
		if err := s.validate(&docs[i], fmt.Sprintf("documents[%d]: ", i), needID); err != nil {
			return nil, 0, err
		}
	}
	lim, err := s.limit(req.Limit)
	return docs, lim, err
}

// sketch returns the ids and sketches of docs (store.SketchBatch: a
// large batch is split among GOMAXPROCS goroutines), and drops the texts
// of docs, which are not needed once sketched: a batch sketched a chunk at
// a time (sketchChunk) gives its texts' memory back to the garbage
// collector as it goes.
func (s *Server) sketch(docs []docIn) []store.Doc {
	out := make([]store.Doc, len(docs))
	for i, d := range docs {
		if d.ID != nil {
			out[i].ID = *d.ID
		}
	}
	store.SketchBatch(out, func(i int) string { return *docs[i].Text }, 0,
		func() *store.Sketcher { return s.sketches.Get().(*store.Sketcher) },
		func(sk *store.Sketcher) { s.sketches.Put(sk) })
	for i := range docs {
		docs[i].Text = nil
	}
	return out
}

// sketchChunkBytes is about how much text of a batch request is sketched
// at once. A MinHash index that keeps shingle sets gives each sketch its
// document's set, 8 bytes a distinct shingle: as much as the text or more
// (word 5-shingles of 3 KB texts: 1.1 times the text; character shingles
// of ASCII text: up to 8 times). A check needs a sketch only until it has
// been queried, so batch/check sketches and queries a chunk at a time and
// holds the sets of one chunk, not of the whole batch; a batch write
// sketches a chunk at a time too, so that its texts are let go as its
// sets grow. A chunk also ends at sketchChunkDocs documents (store.ChunkDocs
// says why).
const (
	sketchChunkBytes = store.ChunkBytes
	sketchChunkDocs  = store.ChunkDocs
)

// sketchChunk returns the end of the chunk of docs that starts at lo: the
// documents from lo on whose texts together first reach
// sketchChunkBytes, at most sketchChunkDocs of them, or the rest
// (store.ChunkEnd).
func sketchChunk(docs []docIn, lo int) int {
	return store.ChunkEnd(lo, len(docs), func(i int) int { return len(*docs[i].Text) })
}

// Responses.

// CheckResult is the answer for one checked document.
type CheckResult struct {
	ID        string        `json:"id,omitempty"`
	Duplicate bool          `json:"duplicate"`
	Matches   []store.Match `json:"matches"`
}

// AddResult is the answer for one added (or check-and-added) document.
type AddResult struct {
	ID        string        `json:"id"`
	Added     bool          `json:"added"`
	Duplicate bool          `json:"duplicate"`
	Matches   []store.Match `json:"matches"`
	Error     string        `json:"error,omitempty"`
}

func nonNil(ms []store.Match) []store.Match {
	if ms == nil {
		return []store.Match{}
	}
	return ms
}

// retryAfterFull is the Retry-After, in seconds, of a write refused on a
// full disk.
const retryAfterFull = "30"

// health answers /healthz: "ok"; "degraded" (200: checks are answered,
// writes refused until disk space is freed); or "failed" (503: writes are
// refused until a restart).
func (s *Server) health(w http.ResponseWriter, _ *http.Request) error {
	docs, err := s.st.Status()
	v := map[string]any{"status": "ok", "documents": docs, "method": s.st.Spec().Method.String(), "writable": true}
	code := http.StatusOK
	switch {
	case errors.Is(err, store.ErrOpenedFull):
		v["status"], v["writable"], v["reason"] = "degraded", false, "the disk was full at start and the index was opened read-only: free space and restart the server to write again"
	case errors.Is(err, store.ErrDiskFull):
		v["status"], v["writable"], v["reason"] = "degraded", false, "disk full: writes are refused until space is freed"
	case errors.Is(err, store.ErrGone):
		v["status"], v["writable"], v["reason"] = "failed", false, "the index folder was removed while the server ran: the documents added since it was opened are lost; create the index again and restart the server"
		code = http.StatusServiceUnavailable
	case errors.Is(err, store.ErrUnreachable):
		v["status"], v["writable"], v["reason"] = "unavailable", false, "the index's Redis server does not answer"
		code = http.StatusServiceUnavailable
	case err != nil:
		v["status"], v["writable"], v["reason"] = "failed", false, "a write failed: restart the server"
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, v)
	return nil
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) error {
	st, err := s.st.Stats()
	if err != nil {
		return err
	}
	st.Dir = "" // a path of the server's machine: not the client's business
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) error {
	d, lim, err := s.readDoc(r, false)
	if err != nil {
		return err
	}
	docs := s.sketch([]docIn{d})
	if err := r.Context().Err(); err != nil {
		return err
	}
	ms, err := s.st.Query(nil, docs[0].Sketch, lim)
	if err != nil {
		return err
	}
	s.met.checked.Add(1)
	if len(ms) > 0 {
		s.met.duplicates.Add(1)
	}
	writeJSON(w, http.StatusOK, CheckResult{ID: docs[0].ID, Duplicate: len(ms) > 0, Matches: nonNil(ms)})
	return nil
}

func (s *Server) add(w http.ResponseWriter, r *http.Request) error {
	d, _, err := s.readDoc(r, true)
	if err != nil {
		return err
	}
	docs := s.sketch([]docIn{d})
	if err := r.Context().Err(); err != nil {
		return err
	}
	if err := s.st.Add(docs[0].ID, docs[0].Sketch); err != nil {
		return err
	}
	s.met.added.Add(1)
	writeJSON(w, http.StatusCreated, AddResult{ID: docs[0].ID, Added: true, Matches: []store.Match{}})
	return nil
}

func (s *Server) checkAndAdd(w http.ResponseWriter, r *http.Request) error {
	d, lim, err := s.readDoc(r, true)
	if err != nil {
		return err
	}
	docs := s.sketch([]docIn{d})
	if err := r.Context().Err(); err != nil {
		return err
	}
	res, err := s.st.CheckAndAdd(docs[0].ID, docs[0].Sketch, lim)
	if err != nil {
		return err
	}
	s.met.checked.Add(1)
	code := http.StatusOK
	if res.Added {
		s.met.added.Add(1)
		code = http.StatusCreated
	} else {
		s.met.duplicates.Add(1)
	}
	writeJSON(w, code, AddResult{ID: docs[0].ID, Added: res.Added, Duplicate: len(res.Matches) > 0, Matches: nonNil(res.Matches)})
	return nil
}

func (s *Server) batchCheck(w http.ResponseWriter, r *http.Request) error {
	in, lim, err := s.readBatch(r, false)
	if err != nil {
		return err
	}
	out := make([]CheckResult, len(in))
	// A chunk at a time, so that the shingle sets of one chunk are held,
	// not those of the whole batch (sketchChunkBytes).
	for lo := 0; lo < len(in); {
		hi := sketchChunk(in, lo)
		docs := s.sketch(in[lo:hi])
		for i := range docs {
			if err := r.Context().Err(); err != nil {
				return err
			}
			ms, err := s.st.Query(nil, docs[i].Sketch, lim)
			if err != nil {
				return err
			}
			out[lo+i] = CheckResult{ID: docs[i].ID, Duplicate: len(ms) > 0, Matches: nonNil(ms)}
			if len(ms) > 0 {
				s.met.duplicates.Add(1)
			}
		}
		lo = hi
	}
	s.met.checked.Add(uint64(len(in)))
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
	return nil
}

func (s *Server) batchAdd(w http.ResponseWriter, r *http.Request) error {
	return s.batchWrite(w, r, false)
}

func (s *Server) batchCheckAndAdd(w http.ResponseWriter, r *http.Request) error {
	return s.batchWrite(w, r, true)
}

func (s *Server) batchWrite(w http.ResponseWriter, r *http.Request, check bool) error {
	in, lim, err := s.readBatch(r, true)
	if err != nil {
		return err
	}
	rs, err := s.writeChunks(r.Context(), in, check, lim)
	if err != nil {
		return err
	}
	out := make([]AddResult, len(in))
	var added, dups uint64
	for i, res := range rs {
		out[i] = AddResult{ID: *in[i].ID, Added: res.Added, Duplicate: len(res.Matches) > 0, Matches: nonNil(res.Matches)}
		if res.Err != nil {
			out[i].Error = clientMessage(res.Err)
		}
		if res.Added {
			added++
		}
		if out[i].Duplicate {
			dups++
		}
	}
	if check {
		s.met.checked.Add(uint64(len(in)))
	}
	s.met.added.Add(added)
	s.met.duplicates.Add(dups)
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
	return nil
}

// writeChunks writes the documents in in one atomic batch write (an add,
// or a check-and-add when check is set) and returns their results. Each
// chunk's texts are let go once sketched (sketchChunkBytes), and the
// index's batch write (store.Index.NewBatchWrite: the embedded store's
// and Redis's alike) is given each chunk's sketches as they are made and
// keeps only their encoded records and keys, so the shingle sets of one
// chunk are held at a time.
func (s *Server) writeChunks(ctx context.Context, in []docIn, check bool, lim int) ([]store.Result, error) {
	wr, err := s.st.NewBatchWrite(check, lim)
	if err != nil {
		return nil, err
	}
	for lo := 0; lo < len(in); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := sketchChunk(in, lo)
		if err := wr.Add(s.sketch(in[lo:hi])); err != nil {
			return nil, err
		}
		lo = hi
		// The request is charged its records once they outgrow its
		// body (admit.go).
		if ch, ok := ctx.Value(chargeKey{}).(*charge); ok {
			if err := ch.growTo(ctx, int64(wr.Held())); err != nil {
				return nil, err
			}
		}
	}
	// Nothing is written before Commit: past the deadline, nothing is.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return wr.Commit()
}

type removeRequest struct {
	IDs *[]string `json:"ids"`
}

// RemoveResult is the answer for one id of /v1/remove.
type RemoveResult struct {
	ID      string `json:"id"`
	Removed bool   `json:"removed"`
	Error   string `json:"error,omitempty"`
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) error {
	var req removeRequest
	buf, err := readBody(r)
	if err != nil {
		return err
	}
	err = decodeBody(buf.Bytes(), &req)
	putBody(buf)
	if err != nil {
		return err
	}
	if req.IDs == nil {
		return errorf(http.StatusBadRequest, "missing \"ids\" (an array of strings)")
	}
	ids := *req.IDs
	if len(ids) > s.cfg.MaxBatch {
		return errorf(http.StatusRequestEntityTooLarge, "%d ids in one request, at most %d", len(ids), s.cfg.MaxBatch)
	}
	for i, id := range ids {
		if id == "" {
			return errorf(http.StatusBadRequest, "ids[%d]: an empty id", i)
		}
		if len(id) > store.MaxIDBytes || !utf8.ValidString(id) {
			return errorf(http.StatusBadRequest, "ids[%d]: invalid id", i)
		}
	}
	out := make([]RemoveResult, len(ids))
	for i, id := range ids {
		if err := r.Context().Err(); err != nil && i == 0 {
			return err
		}
		out[i].ID = id
		err := s.st.Remove(id)
		switch {
		case err == nil:
			out[i].Removed = true
			s.met.removed.Add(1)
		case errors.Is(err, store.ErrNotFound):
			out[i].Error = "not found"
		default:
			return err
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
	return nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	sk, err := s.st.Get(id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "empty": sk.Empty})
	return nil
}

func (s *Server) del(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := r.Context().Err(); err != nil {
		return err
	}
	if err := s.st.Remove(id); err != nil {
		return err
	}
	s.met.removed.Add(1)
	writeJSON(w, http.StatusOK, RemoveResult{ID: id, Removed: true})
	return nil
}
