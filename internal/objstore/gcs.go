// The gs:// backend: a small client of the Google Cloud Storage JSON API
// (https://cloud.google.com/storage/docs/json_api) over net/http, with
// the application default credentials of golang.org/x/oauth2/google.

package objstore

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
)

func init() { openers["gs"] = openGCS }

const (
	// gcsChunkSize is the piece of an upload buffered in memory: a file
	// up to this size goes in one request, a larger one in a resumable
	// upload of chunks this size (a multiple of 256 KiB, as the API
	// wants).
	gcsChunkSize = 16 << 20
	// gcsScope is the OAuth scope of the requests: read and write objects.
	gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"
	// gcsEndpoint is Google Cloud Storage; STORAGE_EMULATOR_HOST replaces it.
	gcsEndpoint = "https://storage.googleapis.com"
)

// gcsTransport is the HTTP transport of every gs:// location of the
// process, so that the folders of one task share their connections. It
// gives up on a connection that does not open within seconds, and on a
// server that does not start answering within a minute. An HTTP/2
// connection (Cloud Storage's) silent for 30 s is pinged, and closed
// when the ping is not answered within 15 s: a read stalled on a dead
// connection then fails, and resumes on a new one, instead of hanging.
var gcsTransport = sync.OnceValue(func() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = 60 * time.Second
	tr.MaxIdleConnsPerHost = 16
	tr.HTTP2 = &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second, WriteByteTimeout: 60 * time.Second}
	return tr
})

// gcsBackend is a prefix of a Google Cloud Storage bucket, or of a bucket
// of the emulator named by STORAGE_EMULATOR_HOST.
type gcsBackend struct {
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // gcsEndpoint, or the emulator's URL
	emulator string // STORAGE_EMULATOR_HOST as set, or ""
	client   *http.Client
}

func openGCS(ctx context.Context, rawURL string) (backend, error) {
	bucket, prefix, err := splitBucketURL(rawURL, "gs")
	if err != nil {
		return nil, err
	}
	b := &gcsBackend{bucket: bucket, prefix: prefix, endpoint: gcsEndpoint}
	// No request of the API is redirected; a 308 is a resumable
	// upload's progress.
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	plain := &http.Client{Transport: gcsTransport(), CheckRedirect: noRedirect}
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		// The emulator takes no credentials. Its address is host:port,
		// or a URL.
		b.emulator = h
		b.endpoint = strings.TrimRight(h, "/")
		if !strings.Contains(h, "://") {
			b.endpoint = "http://" + b.endpoint
		}
		b.client = plain
	} else {
		ts, err := gcsTokens(ctx, plain)
		if err != nil {
			return nil, fmt.Errorf("no usable Google credentials (run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file): %w", err)
		}
		b.client = &http.Client{Transport: &oauth2.Transport{Source: ts, Base: gcsTransport()}, CheckRedirect: noRedirect}
	}
	// One listing of at most one object checks the endpoint, the
	// credentials and the bucket now, with a clear error, rather than at
	// the first read or write of a long job.
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if _, err := b.listPage(cctx, prefix, "", 1); err != nil {
		if isGCSStatus(err, http.StatusNotFound) {
			return nil, b.bucketMissing(err)
		}
		return nil, b.explain(err)
	}
	return b, nil
}

// gcsTokenSources holds the token source of the application default
// credentials by the value of GOOGLE_APPLICATION_CREDENTIALS, so that
// every gs:// location a process opens (a task opens several, a command
// one per input object) shares one token instead of asking for its own.
var gcsTokenSources = struct {
	sync.Mutex
	m map[string]oauth2.TokenSource
}{m: map[string]oauth2.TokenSource{}}

// gcsTokens finds the application default credentials, or returns those
// found before. Their token is refreshed with a context that is never
// cancelled, through client.
func gcsTokens(ctx context.Context, client *http.Client) (oauth2.TokenSource, error) {
	gcsTokenSources.Lock()
	defer gcsTokenSources.Unlock()
	env := os.Getenv("GOOGLE_APPLICATION_CREDENTIALS")
	if ts, ok := gcsTokenSources.m[env]; ok {
		return ts, nil
	}
	creds, err := google.FindDefaultCredentials(context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, client), gcsScope)
	if err != nil {
		return nil, err
	}
	gcsTokenSources.m[env] = creds.TokenSource
	return creds.TokenSource, nil
}

func (b *gcsBackend) key(name string) string { return b.prefix + name }

// objectURL is the JSON API's URL of the object key; query is appended
// when not "".
func (b *gcsBackend) objectURL(key, query string) string {
	u := b.endpoint + "/storage/v1/b/" + url.PathEscape(b.bucket) + "/o/" + url.PathEscape(key)
	if query != "" {
		u += "?" + query
	}
	return u
}

// gcsError is an error answer of the API: its HTTP status and message.
type gcsError struct {
	code    int
	message string
}

func (e *gcsError) Error() string {
	return fmt.Sprintf("Google Cloud Storage answered %d %s: %s", e.code, http.StatusText(e.code), e.message)
}

// readGCSError makes the error of an answer with an error status, from
// its JSON body ({"error": {"code": 404, "message": "..."}}) or its text.
func readGCSError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	var doc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &doc) == nil && doc.Error.Message != "" {
		msg = doc.Error.Message
	}
	if msg == "" {
		msg = "(no message)"
	}
	return &gcsError{code: resp.StatusCode, message: msg}
}

func isGCSStatus(err error, code int) bool {
	var ge *gcsError
	return errors.As(err, &ge) && ge.code == code
}

// retryable tells whether a request that failed with err may succeed if
// sent again: a network error (an answer broken off included), or an
// answer of 408, 429 or 5xx. A refused token, an untrusted certificate or
// an answer that is not the JSON expected will not.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var ge *gcsError
	if errors.As(err, &ge) {
		return ge.code == http.StatusRequestTimeout || ge.code == http.StatusTooManyRequests || ge.code >= 500
	}
	var re *oauth2.RetrieveError
	var ce *tls.CertificateVerificationError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return !errors.As(err, &re) && !errors.As(err, &ce) && !errors.As(err, &se) && !errors.As(err, &te) && !errors.Is(err, context.Canceled)
}

// pause waits before try number try+1 (try counting from 1): 100 ms
// doubling to at most 2 s, less a random part of up to half, so that
// many tasks throttled at once do not come back together.
func pause(ctx context.Context, try int) error {
	d := min(100*time.Millisecond<<(try-1), 2*time.Second)
	d -= rand.N(d / 2)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// gcsRetry calls f, and again after a failure that retryable allows, at
// most maxAttempts times.
func gcsRetry(ctx context.Context, f func() error) error {
	for try := 1; ; try++ {
		err := f()
		if err == nil || try == maxAttempts || !retryable(ctx, err) {
			return err
		}
		if err := pause(ctx, try); err != nil {
			return err
		}
	}
}

// do sends a request of method to u with body (nil for none) and header,
// through gcsRetry. It returns an answer of status 2xx or 308 with its body
// unread; another status becomes a *gcsError.
func (b *gcsBackend) do(ctx context.Context, method, u string, body []byte, header http.Header) (*http.Response, error) {
	var resp *http.Response
	err := gcsRetry(ctx, func() (err error) {
		resp, err = b.send(ctx, method, u, body, header)
		return err
	})
	return resp, err
}

// send is one try of do.
func (b *gcsBackend) send(ctx context.Context, method, u string, body []byte, header http.Header) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusPermanentRedirect {
		defer resp.Body.Close()
		return nil, readGCSError(resp)
	}
	return resp, nil
}

// discard reads the rest of an answer's body and closes it, so that its
// connection is used again.
func discard(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// explain turns an error into one that says what to fix, wrapping it.
func (b *gcsBackend) explain(err error) error {
	var ge *gcsError
	if errors.As(err, &ge) {
		switch ge.code {
		case http.StatusUnauthorized:
			return fmt.Errorf("the Google credentials were refused (check GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default login`): %w", err)
		case http.StatusForbidden:
			return fmt.Errorf("access denied to gs://%s/%s (check that the credentials may list, read and write this bucket): %w", b.bucket, b.prefix, err)
		}
		return err
	}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) || strings.Contains(err.Error(), "oauth2") || strings.Contains(err.Error(), "credentials") {
		return fmt.Errorf("no usable Google credentials (run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS): %w", err)
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
		where := "Google Cloud Storage"
		if b.emulator != "" {
			where = "the storage emulator at " + b.emulator + " (STORAGE_EMULATOR_HOST)"
		}
		return &unreachable{msg: fmt.Sprintf("cannot reach %s: check the network: %v", where, err), err: err}
	}
	return err
}

// bucketMissing is the error of a bucket's listing answered 404.
func (b *gcsBackend) bucketMissing(err error) error {
	hint := ""
	if b.emulator != "" {
		hint = "; STORAGE_EMULATOR_HOST is " + b.emulator
	}
	return fmt.Errorf("bucket %q does not exist (create it, or check the URL%s): %w", b.bucket, hint, err)
}

// listPage lists one page of at most limit objects (0: the API's default,
// 1000) whose names start with prefix, from the page token (""
// for the first). It returns the names and the next page's token, "" after
// the last page.
func (b *gcsBackend) listPage(ctx context.Context, prefix, token string, limit int) (gcsPage, error) {
	q := url.Values{"prefix": {prefix}, "fields": {"items(name,size,generation),nextPageToken"}}
	if token != "" {
		q.Set("pageToken", token)
	}
	if limit > 0 {
		q.Set("maxResults", strconv.Itoa(limit))
	}
	u := b.endpoint + "/storage/v1/b/" + url.PathEscape(b.bucket) + "/o?" + q.Encode()
	var page gcsPage
	// A page broken off on the way is asked for again too.
	err := gcsRetry(ctx, func() error {
		resp, err := b.send(ctx, http.MethodGet, u, nil, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		page = gcsPage{}
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
			return fmt.Errorf("reading a listing of gs://%s/%s: %w", b.bucket, prefix, err)
		}
		return nil
	})
	return page, err
}

type gcsPage struct {
	Items []struct {
		Name       string `json:"name"`
		Size       string `json:"size"` // decimal, as the JSON API writes int64s
		Generation string `json:"generation"`
	} `json:"items"`
	NextPageToken string `json:"nextPageToken"`
}

func (b *gcsBackend) list(ctx context.Context, prefix string) ([]string, error) {
	names, _, err := b.listVersions(ctx, prefix)
	return names, err
}

// listVersions is list with each object's size and generation, as the
// listing gives them (a zero Version where it did not).
func (b *gcsBackend) listVersions(ctx context.Context, prefix string) ([]string, []Version, error) {
	var names []string
	var vs []Version
	token := ""
	for {
		page, err := b.listPage(ctx, b.key(prefix), token, 0)
		if err != nil {
			if isGCSStatus(err, http.StatusNotFound) {
				return nil, nil, b.bucketMissing(err)
			}
			return nil, nil, b.explain(err)
		}
		for _, it := range page.Items {
			if strings.HasSuffix(it.Name, "/") { // a folder marker
				continue
			}
			names = append(names, strings.TrimPrefix(it.Name, b.prefix))
			var v Version
			if size, err := strconv.ParseInt(it.Size, 10, 64); err == nil && it.Generation != "" {
				v = Version{Size: size, tag: it.Generation}
			}
			vs = append(vs, v)
		}
		if page.NextPageToken == "" {
			return names, vs, nil
		}
		token = page.NextPageToken
	}
}

func (b *gcsBackend) exists(ctx context.Context, name string) (bool, error) {
	resp, err := b.do(ctx, http.MethodGet, b.objectURL(b.key(name), "fields=name"), nil, nil)
	if isGCSStatus(err, http.StatusNotFound) {
		return false, nil
	}
	if err != nil {
		return false, b.explain(err)
	}
	discard(resp)
	return true, nil
}

func (b *gcsBackend) remove(ctx context.Context, name string) error {
	// A delete tried again after its answer was lost finds nothing: 404
	// is success too.
	resp, err := b.do(ctx, http.MethodDelete, b.objectURL(b.key(name), ""), nil, nil)
	if isGCSStatus(err, http.StatusNotFound) {
		return nil
	}
	if err != nil {
		return b.explain(err)
	}
	discard(resp)
	return nil
}

func (b *gcsBackend) close() error { return nil }

// open reads the object through a gcsReader: a read broken by the
// network goes on from the bytes delivered (a ranged read of the same
// generation), and the whole object's CRC32C is checked at its end.
func (b *gcsBackend) open(ctx context.Context, name string) (io.ReadCloser, error) {
	r := &gcsReader{b: b, ctx: ctx, url: b.objectURL(b.key(name), "alt=media")}
	if err := r.get(); err != nil {
		if isGCSStatus(err, http.StatusNotFound) {
			return nil, fmt.Errorf("%w (%v)", ErrNotExist, err)
		}
		return nil, b.explain(err)
	}
	st := newStream(r, r.size).(stream)
	st.tag = r.version
	return st, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// gcsReader is the body of an object's download, resumed after a break.
type gcsReader struct {
	b    *gcsBackend
	ctx  context.Context
	url  string
	body io.ReadCloser

	gen     string // the generation read, "" when the answer did not say (no resuming then)
	version string // the generation of the first answer, even when not resumable
	size    int64  // the object's size (a range's end), or -1 when unknown
	end     int64  // a ranged read's end (exclusive), 0 for the whole object
	off     int64  // bytes delivered
	crc     uint32 // of the bytes delivered
	wantCRC uint32
	hasCRC  bool  // the answer had the object's CRC32C and the bytes are the stored ones
	broken  error // the error that broke the body, to resume from
	fails   int   // breaks since the last byte delivered
}

// get starts the download at r.off (to r.end, when a range).
func (r *gcsReader) get() error {
	u, header := r.url, http.Header{}
	if r.off > 0 || r.end > 0 {
		if r.gen != "" {
			u += "&generation=" + r.gen
		}
		rng := "bytes=" + strconv.FormatInt(r.off, 10) + "-"
		if r.end > 0 {
			rng += strconv.FormatInt(r.end-1, 10)
		}
		header.Set("Range", rng)
	}
	resp, err := r.b.do(r.ctx, http.MethodGet, u, nil, header)
	if err != nil {
		if r.gen != "" && isGCSStatus(err, http.StatusNotFound) && r.end > 0 {
			return fmt.Errorf("%w: generation %s is gone (%v)", ErrChanged, r.gen, err)
		}
		return err
	}
	if r.off > 0 || r.end > 0 {
		if resp.StatusCode != http.StatusPartialContent || !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes "+strconv.FormatInt(r.off, 10)+"-") {
			discard(resp)
			what := "resuming a broken read"
			if r.end > 0 {
				what = "a ranged read"
			}
			return fmt.Errorf("%s at byte %d: the answer was %s, Content-Range %q", what, r.off, resp.Status, resp.Header.Get("Content-Range"))
		}
		if r.gen == "" {
			r.gen = resp.Header.Get("X-Goog-Generation")
		}
		r.body = resp.Body
		return nil
	}
	r.body, r.size = resp.Body, resp.ContentLength
	r.version = resp.Header.Get("X-Goog-Generation")
	if resp.Uncompressed {
		// Stored gzip-encoded and decompressed on the way: neither the
		// stored CRC32C nor byte ranges apply to what is read.
		return nil
	}
	r.gen = resp.Header.Get("X-Goog-Generation")
	for _, v := range resp.Header.Values("X-Goog-Hash") {
		for h := range strings.SplitSeq(v, ",") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(h), "crc32c="); ok {
				if c, err := base64.StdEncoding.DecodeString(s); err == nil && len(c) == 4 {
					r.wantCRC, r.hasCRC = binary.BigEndian.Uint32(c), true
				}
			}
		}
	}
	return nil
}

func (r *gcsReader) Read(p []byte) (int, error) {
	if r.broken != nil {
		if err := r.resume(); err != nil {
			return 0, err
		}
	}
	n, err := r.body.Read(p)
	if n > 0 {
		r.off += int64(n)
		r.crc = crc32.Update(r.crc, castagnoli, p[:n])
		r.fails = 0
	}
	switch {
	case err == io.EOF:
		if r.hasCRC && r.crc != r.wantCRC {
			return n, fmt.Errorf("the object read has CRC32C %08x, not its stored %08x: it was damaged on the way", r.crc, r.wantCRC)
		}
		return n, io.EOF
	case err != nil:
		r.broken = err
		if n > 0 {
			return n, nil
		}
		return r.Read(p)
	}
	return n, nil
}

// resume opens the object again from the bytes delivered, after the body
// broke with r.broken, when the break may pass and has not come
// maxAttempts times in a row.
func (r *gcsReader) resume() error {
	err := r.broken
	r.body.Close()
	if r.size >= 0 && r.off == r.size {
		r.body, r.broken = http.NoBody, nil // broke after the last byte
		return nil
	}
	r.fails++
	if r.gen == "" || r.fails >= maxAttempts || !retryable(r.ctx, err) {
		r.body = http.NoBody
		return err
	}
	if perr := pause(r.ctx, r.fails); perr != nil {
		return err
	}
	if gerr := r.get(); gerr != nil {
		r.body = http.NoBody
		return fmt.Errorf("%w (and resuming it: %v)", err, gerr)
	}
	r.broken = nil
	return nil
}

func (r *gcsReader) Close() error { return r.body.Close() }

// openRange reads the range through a gcsReader of the generation v (or
// of the first answer's): a break goes on from the bytes delivered, with
// the same generation. There is no checksum of a range to check: the
// caller checks what it reads.
func (b *gcsBackend) openRange(ctx context.Context, name string, off, n int64, v Version) (io.ReadCloser, error) {
	r := &gcsReader{b: b, ctx: ctx, url: b.objectURL(b.key(name), "alt=media"), gen: v.tag, off: off, end: off + n, size: off + n}
	if err := r.get(); err != nil {
		if isGCSStatus(err, http.StatusNotFound) {
			return nil, fmt.Errorf("%w (%v)", ErrNotExist, err)
		}
		return nil, b.explain(err)
	}
	return &gcsRange{r}, nil
}

// gcsRange is a gcsReader of a range: an answer that ends before the
// range's end is broken, not the end.
type gcsRange struct{ *gcsReader }

func (r *gcsRange) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	n, err := r.gcsReader.Read(p[:min(int64(len(p)), r.end-r.off)])
	if err == io.EOF && r.off < r.end {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// tail reads the last n bytes with a suffix range ("bytes=-n"): the
// answer's Content-Range gives the object's size, X-Goog-Generation its
// version.
func (b *gcsBackend) tail(ctx context.Context, name string, n int64) ([]byte, Version, error) {
	var data []byte
	var v Version
	err := gcsRetry(ctx, func() error {
		resp, err := b.send(ctx, http.MethodGet, b.objectURL(b.key(name), "alt=media"), nil, http.Header{"Range": {"bytes=-" + strconv.FormatInt(n, 10)}})
		if err != nil {
			if isGCSStatus(err, http.StatusRequestedRangeNotSatisfiable) {
				data, v = nil, Version{} // an empty object
				return nil
			}
			return err
		}
		defer resp.Body.Close()
		if data, err = readAll(resp.Body, make([]byte, 0, min(n, 1<<20))); err != nil {
			return err // broken off: asked again
		}
		v = Version{Size: int64(len(data)), tag: resp.Header.Get("X-Goog-Generation")}
		if cr := resp.Header.Get("Content-Range"); resp.StatusCode == http.StatusPartialContent && cr != "" {
			_, total, ok := strings.Cut(cr, "/")
			if v.Size, err = strconv.ParseInt(total, 10, 64); !ok || err != nil || v.Size < int64(len(data)) {
				return fmt.Errorf("the answer's Content-Range %q does not give the object's size", cr)
			}
		}
		if int64(len(data)) != min(n, v.Size) {
			return fmt.Errorf("asked for the last %d bytes of %d, got %d: %w", n, v.Size, len(data), io.ErrUnexpectedEOF)
		}
		return nil
	})
	if err != nil {
		if isGCSStatus(err, http.StatusNotFound) {
			return nil, Version{}, fmt.Errorf("%w (%v)", ErrNotExist, err)
		}
		return nil, Version{}, b.explain(err)
	}
	return data, v, nil
}

// put uploads the object in one request when write writes at most
// gcsChunkSize bytes, else in a resumable upload of chunks of that size,
// each sent again after a failure from where the server says it got to.
// The object appears only when the last request is answered; a write
// that fails, or a context cancelled before then, leave nothing.
func (b *gcsBackend) put(ctx context.Context, name string, write func(io.Writer) error) error {
	u := &gcsUpload{b: b, ctx: ctx, key: b.key(name)}
	werr := write(u)
	if werr == nil && u.err == nil {
		werr = u.finish()
	}
	if u.err != nil {
		u.cancel()
		return b.explain(u.err) // storage failed first: its error is the cause
	}
	if werr != nil {
		u.cancel()
		return werr
	}
	return nil
}

// gcsUpload is the writer of an upload.
type gcsUpload struct {
	b       *gcsBackend
	ctx     context.Context
	key     string
	buf     []byte // the bytes not yet sent, at most a chunk (grown as needed: most files are small)
	session string // the resumable upload's URL, "" before the first chunk
	off     int64  // bytes the server has
	err     error  // the failure of storage, for every later Write
}

func (u *gcsUpload) Write(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n := 0
	for len(p) > 0 {
		if len(u.buf) == gcsChunkSize {
			// A full chunk, and more to come: it is not the last.
			if u.err = u.sendChunk(false); u.err != nil {
				return n, u.err
			}
		}
		k := min(len(p), gcsChunkSize-len(u.buf))
		if len(u.buf)+k > cap(u.buf) {
			grown := make([]byte, len(u.buf), min(max(2*cap(u.buf), len(u.buf)+k, 64<<10), gcsChunkSize))
			copy(grown, u.buf)
			u.buf = grown
		}
		u.buf = append(u.buf, p[:k]...)
		p = p[k:]
		n += k
	}
	return n, nil
}

// finish sends what is left: the whole object in one request if no chunk
// went before (tried again after a failure that may pass: the object
// appears whole either way), else the last chunk.
func (u *gcsUpload) finish() error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	if u.session == "" {
		q := url.Values{"uploadType": {"media"}, "name": {u.key}, "fields": {"name"}}
		resp, err := u.b.do(u.ctx, http.MethodPost, u.b.endpoint+"/upload/storage/v1/b/"+url.PathEscape(u.b.bucket)+"/o?"+q.Encode(),
			u.buf, http.Header{"Content-Type": {"application/octet-stream"}})
		if err != nil {
			u.err = err
			return nil
		}
		discard(resp)
		return nil
	}
	u.err = u.sendChunk(true)
	return nil
}

// sendChunk sends u.buf to the resumable upload, starting it first if
// needed; last says it ends the object. After a failure that may pass it
// asks the server how many bytes it has and sends the rest again, at
// most maxAttempts times.
func (u *gcsUpload) sendChunk(last bool) error {
	if u.session == "" {
		if err := u.start(); err != nil {
			return err
		}
	}
	start := u.off // the offset of u.buf[0]
	end := start + int64(len(u.buf))
	for try := 1; ; {
		before := u.off
		done, err := u.putRange(u.buf[u.off-start:], last)
		if err != nil {
			if try == maxAttempts || !retryable(u.ctx, err) {
				return err
			}
			if err := pause(u.ctx, try); err != nil {
				return err
			}
			try++
			if done, err = u.status(); err != nil {
				return err
			}
		} else if !done && u.off == before {
			// Answered, but nothing kept: a try too.
			if try == maxAttempts {
				return fmt.Errorf("the resumable upload of %s kept none of the %d bytes sent from byte %d", u.key, end-before, before)
			}
			try++
		}
		switch {
		case done && last, !done && !last && u.off == end:
			u.buf = u.buf[:0]
			return nil
		case done || u.off < start || u.off > end:
			return fmt.Errorf("the resumable upload of %s says it holds %d bytes (done: %v) where bytes %d to %d were sent", u.key, u.off, done, start, end)
		}
		// The server kept part of the chunk: the rest goes next.
	}
}

// start begins a resumable upload.
func (u *gcsUpload) start() error {
	q := url.Values{"uploadType": {"resumable"}, "name": {u.key}}
	meta, _ := json.Marshal(map[string]string{"name": u.key})
	resp, err := u.b.do(u.ctx, http.MethodPost, u.b.endpoint+"/upload/storage/v1/b/"+url.PathEscape(u.b.bucket)+"/o?"+q.Encode(),
		meta, http.Header{"Content-Type": {"application/json; charset=UTF-8"}})
	if err != nil {
		return err
	}
	discard(resp)
	u.session = resp.Header.Get("Location")
	if u.session == "" {
		return fmt.Errorf("starting the upload of %s: the answer (%s) has no Location", u.key, resp.Status)
	}
	return nil
}

// putRange sends data, the bytes from u.off on, to the session (once);
// last says they end the object. It sets u.off to what the server holds
// and says whether the object is done.
func (u *gcsUpload) putRange(data []byte, last bool) (done bool, err error) {
	total := "*"
	if last {
		total = strconv.FormatInt(u.off+int64(len(data)), 10)
	}
	rng := "bytes */" + total
	if len(data) > 0 {
		rng = fmt.Sprintf("bytes %d-%d/%s", u.off, u.off+int64(len(data))-1, total)
	}
	resp, err := u.b.send(u.ctx, http.MethodPut, u.session, data, http.Header{"Content-Range": {rng}})
	if err != nil {
		return false, err
	}
	return u.progress(resp)
}

// status asks the session how many bytes it holds, trying again after a
// failure that may pass.
func (u *gcsUpload) status() (done bool, err error) {
	resp, err := u.b.do(u.ctx, http.MethodPut, u.session, []byte{}, http.Header{"Content-Range": {"bytes */*"}})
	if err != nil {
		return false, err
	}
	return u.progress(resp)
}

// progress reads an answer of the session: 200 or 201 when the object is
// done, 308 with the bytes held in its Range ("bytes=0-N", none without).
func (u *gcsUpload) progress(resp *http.Response) (done bool, err error) {
	defer discard(resp)
	if resp.StatusCode != http.StatusPermanentRedirect {
		return true, nil
	}
	u.off = 0
	if r := resp.Header.Get("Range"); r != "" {
		last, ok := strings.CutPrefix(r, "bytes=0-")
		n, err := strconv.ParseInt(last, 10, 64)
		if !ok || err != nil {
			return false, fmt.Errorf("the resumable upload of %s answered Range %q", u.key, r)
		}
		u.off = n + 1
	}
	return false, nil
}

// cancel ends a resumable upload that will not be finished, so that the
// server drops its bytes (it would after a week anyway). It is tried
// once, for a few seconds, even when the context was cancelled.
func (u *gcsUpload) cancel() {
	if u.session == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.WithoutCancel(u.ctx), 5*time.Second)
	defer stop()
	if resp, err := u.b.send(ctx, http.MethodDelete, u.session, nil, nil); err == nil {
		discard(resp)
	}
}
