package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/objstoretest"
)

// TestRange: ReadTail and OpenRange on every backend: the end of a file
// with its version, ranges of it, an empty range (no request), a range
// past the end, and a range of a version that was replaced.
func TestRange(t *testing.T) {
	for _, l := range locations {
		t.Run(l.name, func(t *testing.T) {
			f := open(t, l.loc(t))
			ctx := context.Background()
			data := pattern(3<<20 + 5)
			if err := f.PutBytes(ctx, "p/x", data); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int64{16, 1000, int64(len(data)), int64(len(data)) + 10} {
				b, v, err := f.ReadTail(ctx, "p/x", n)
				want := data[max(int64(len(data))-n, 0):]
				if err != nil || !bytes.Equal(b, want) || v.Size != int64(len(data)) {
					t.Errorf("ReadTail(%d) = %d bytes, size %d, %v, want %d bytes, size %d", n, len(b), v.Size, err, len(want), len(data))
				}
			}
			_, v, err := f.ReadTail(ctx, "p/x", 16)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range [][2]int64{{0, 1}, {0, int64(len(data))}, {1<<20 - 3, 1<<20 + 9}, {int64(len(data)) - 1, 1}, {5, 0}} {
				for _, ver := range []objstore.Version{v, {}} {
					rc, err := f.OpenRange(ctx, "p/x", r[0], r[1], ver)
					if err != nil {
						t.Fatalf("OpenRange(%d, %d) = %v", r[0], r[1], err)
					}
					b, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(b, data[r[0]:r[0]+r[1]]) {
						t.Errorf("OpenRange(%d, %d) read %d bytes, %v, want %d", r[0], r[1], len(b), err, r[1])
					}
				}
			}
			if _, err := f.OpenRange(ctx, "p/x", int64(len(data))-3, 10, v); err == nil || !strings.Contains(err.Error(), f.URL("p/x")) {
				t.Errorf("OpenRange past the end = %v, want an error naming %s", err, f.URL("p/x"))
			}
			if rc, err := f.OpenRange(ctx, "p/x", int64(len(data))-3, 10, objstore.Version{}); err == nil {
				_, err = io.ReadAll(rc)
				rc.Close()
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("reading past the end of any version = %v, want io.ErrUnexpectedEOF", err)
				}
			} else if !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "416") && !strings.Contains(err.Error(), "InvalidRange") {
				t.Errorf("OpenRange past the end of any version = %v", err)
			}
			if _, _, err := f.ReadTail(ctx, "p/missing", 16); !errors.Is(err, objstore.ErrNotExist) {
				t.Errorf("ReadTail(missing) = %v, want ErrNotExist", err)
			}
			// Written again: the old version's range is refused.
			if err := f.PutBytes(ctx, "p/x", data[:len(data)-1]); err != nil {
				t.Fatal(err)
			}
			rc, err := f.OpenRange(ctx, "p/x", 0, 10, v)
			if err == nil {
				_, err = io.ReadAll(rc)
				rc.Close()
			}
			if !errors.Is(err, objstore.ErrChanged) || !strings.Contains(err.Error(), f.URL("p/x")) {
				t.Errorf("OpenRange of a replaced version = %v, want ErrChanged naming the file", err)
			}
		})
	}
}

// TestGCSRangeResumes: a ranged read broken half-way goes on from the
// bytes delivered, asking for the rest of the range of the same
// generation.
func TestGCSRangeResumes(t *testing.T) {
	f := newFakeGCS(t)
	d := openFake(t)
	data := pattern(3 << 20)
	f.setObject("pre/x", data)
	const off, n, cut = 1000, 2 << 20, 1<<20 + 7
	broken := 0
	f.setHook(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") != "bytes="+strconv.Itoa(off)+"-"+strconv.Itoa(off+n-1) || broken == 1 {
			return false
		}
		broken++
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Header().Set("Content-Range", "bytes "+strconv.Itoa(off)+"-"+strconv.Itoa(off+n-1)+"/"+strconv.Itoa(len(data)))
		w.Header().Set("X-Goog-Generation", "1")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(data[off : off+cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection breaks
	})
	checkBrokenRange(t, context.Background(), d, data, off, n)
	want := "GET /storage/v1/b/b/o/pre/x?alt=media&generation=1 bytes=" + strconv.Itoa(off+cut) + "-" + strconv.Itoa(off+n-1)
	if r := f.requests(want); len(r) != 1 {
		t.Errorf("the ranged reads were %q, want one %q", f.requests("GET /storage/v1/b/b/o/pre/x"), want)
	}
}

// TestS3RangeResumes: on the S3 server, through a proxy that breaks the
// first ranged answer half-way, the read goes on from the bytes
// delivered with a ranged GET of the same ETag (If-Match).
func TestS3RangeResumes(t *testing.T) {
	s := objstoretest.S3(t)
	s.Env(t)
	bucket := s.Bucket(t)
	ctx := context.Background()
	data := pattern(3 << 20)
	if err := open(t, "s3://"+bucket+"/pre").PutBytes(ctx, "x", data); err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(getenv(t, "AWS_ENDPOINT_URL_S3"))
	if err != nil {
		t.Fatal(err)
	}
	const off, n, cut = 1000, 2 << 20, 1<<20 + 7
	var mu sync.Mutex
	var ranges []string
	broken := false
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host = target.Scheme, target.Host
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		mu.Lock()
		if rg := r.Header.Get("Range"); rg != "" {
			ranges = append(ranges, rg+" "+r.Header.Get("If-Match"))
		}
		breakIt := !broken && r.Header.Get("Range") == "bytes="+strconv.Itoa(off)+"-"+strconv.Itoa(off+n-1)
		broken = broken || breakIt
		mu.Unlock()
		w.WriteHeader(resp.StatusCode)
		if breakIt {
			io.CopyN(w, resp.Body, cut)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		io.Copy(w, resp.Body)
	}))
	defer proxy.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	f := open(t, "s3://"+bucket+"/pre")
	checkBrokenRange(t, ctx, f, data, off, n)
	mu.Lock()
	defer mu.Unlock()
	if !broken || len(ranges) != 3 || !strings.HasPrefix(ranges[2], "bytes="+strconv.Itoa(off+cut)+"-"+strconv.Itoa(off+n-1)+" \"") {
		t.Errorf("the ranged GETs were %q, want the tail, the range and the rest from byte %d with If-Match", ranges, off+cut)
	}
}

func getenv(t *testing.T, k string) string {
	v, ok := os.LookupEnv(k)
	if !ok {
		t.Fatalf("%s is not set", k)
	}
	return v
}

// checkBrokenRange reads bytes off to off+n of object x of f (the version
// ReadTail gives) and fails unless they are data's.
func checkBrokenRange(t *testing.T, ctx context.Context, f *objstore.Folder, data []byte, off, n int) {
	t.Helper()
	_, v, err := f.ReadTail(ctx, "x", 16)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := f.OpenRange(ctx, "x", int64(off), int64(n), v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data[off:off+n]) {
		t.Fatalf("a broken ranged read = %d bytes, %v, want %d bytes", len(got), err, n)
	}
}

// TestSizes: Versions gives each object's size on S3 and GCS (an empty one
// and objects in two folders included, in the order asked), and fails
// naming a missing object, with an error wrapping ErrNotExist.
func TestSizes(t *testing.T) {
	for _, l := range locations {
		if l.name == "local" {
			continue
		}
		t.Run(l.name, func(t *testing.T) {
			loc := l.loc(t)
			f := open(t, loc)
			ctx := context.Background()
			want := map[string]int64{"a": 3<<20 + 5, "d/b": 17, "empty": 0, "d/e/c": 1}
			var urls []string
			var sizes []int64
			for _, n := range []string{"d/b", "a", "empty", "d/e/c"} {
				if err := f.PutBytes(ctx, n, pattern(int(want[n]))); err != nil {
					t.Fatal(err)
				}
				urls, sizes = append(urls, f.URL(n)), append(sizes, want[n])
			}
			vs, err := objstore.Versions(ctx, urls)
			got := make([]int64, len(vs))
			for k, v := range vs {
				got[k] = v.Size
			}
			if err != nil || !slices.Equal(got, sizes) {
				t.Fatalf("Versions(%q) sizes = %v, %v, want %v", urls, got, err, sizes)
			}
			missing := f.URL("d/missing")
			if _, err := objstore.Versions(ctx, append(urls, missing)); !errors.Is(err, objstore.ErrNotExist) || !strings.Contains(err.Error(), missing) {
				t.Errorf("Versions of a missing object = %v, want ErrNotExist naming %s", err, missing)
			}
		})
	}
}

// TestExpandVersions: the versions a prefix's listing gives (S3: size and
// ETag; GCS: size and generation) are those Versions asks of each object,
// and those an object's download answers with (VersionOf), so that a
// staged plan may take them from the listing; an object written again
// with the same size has another.
func TestExpandVersions(t *testing.T) {
	for _, l := range locations {
		if l.name == "local" {
			continue
		}
		t.Run(l.name, func(t *testing.T) {
			loc := l.loc(t)
			f := open(t, loc)
			ctx := context.Background()
			for _, n := range []string{"in/d/b", "in/a", "in/empty"} {
				if err := f.PutBytes(ctx, n, pattern(len(n)*1000)); err != nil {
					t.Fatal(err)
				}
			}
			urls, vs, err := objstore.ExpandVersions(ctx, f.URL("in"))
			if err != nil || len(urls) != 3 || len(vs) != 3 {
				t.Fatalf("ExpandVersions = %q, %v, %v", urls, vs, err)
			}
			asked, err := objstore.Versions(ctx, urls)
			if err != nil {
				t.Fatal(err)
			}
			for k, u := range urls {
				r, err := objstore.OpenURL(ctx, u)
				if err != nil {
					t.Fatal(err)
				}
				got, ok := objstore.VersionOf(r)
				r.Close()
				if vs[k].Tag() == "" || vs[k] != asked[k] || !ok || got != vs[k] {
					t.Errorf("%s: listed %+v (tag %q), asked %+v, downloaded %+v: want one version", u, vs[k], vs[k].Tag(), asked[k], got)
				}
			}
			if err := f.PutBytes(ctx, "in/a", pattern(len("in/a")*1000 + 1)[1:]); err != nil {
				t.Fatal(err)
			}
			_, again, err := objstore.ExpandVersions(ctx, f.URL("in"))
			if err != nil || again[0].Size != vs[0].Size || again[0] == vs[0] {
				t.Errorf("in/a written again with the same size: listed %+v, then %+v (%v): want another tag", vs[0], again[0], err)
			}
		})
	}
}
