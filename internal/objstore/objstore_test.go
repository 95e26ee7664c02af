package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/objstoretest"
)

// backends returns a location of each kind to run the contract on: a
// local folder, a prefix on a real S3 server and one on the GCS emulator.
// The servers' environment is set by the caller of each.
type location struct {
	name string
	loc  func(t *testing.T) string
}

var locations = []location{
	{"local", func(t *testing.T) string { return t.TempDir() + "/work" }},
	{"s3", func(t *testing.T) string {
		s := objstoretest.S3(t)
		s.Env(t)
		return "s3://" + s.Bucket(t) + "/some/prefix"
	}},
	{"gcs", func(t *testing.T) string {
		s := objstoretest.GCS(t)
		s.Env(t)
		return "gs://" + s.Bucket(t) + "/some/prefix"
	}},
}

func open(t *testing.T, loc string) *objstore.Folder {
	t.Helper()
	f, err := objstore.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestContract(t *testing.T) {
	for _, l := range locations {
		t.Run(l.name, func(t *testing.T) {
			loc := l.loc(t)
			f := open(t, loc)
			ctx := context.Background()

			// Missing file: ErrNotExist, naming the URL.
			_, err := f.Open(ctx, "missing.jsonl")
			if !errors.Is(err, objstore.ErrNotExist) || !strings.Contains(err.Error(), f.URL("missing.jsonl")) {
				t.Errorf("Open(missing) = %v, want ErrNotExist naming %s", err, f.URL("missing.jsonl"))
			}
			if ok, err := f.Exists(ctx, "missing.jsonl"); ok || err != nil {
				t.Errorf("Exists(missing) = %v, %v, want false, nil", ok, err)
			}

			// Put, read back, overwrite.
			if err := f.PutBytes(ctx, "a/one.txt", []byte("first")); err != nil {
				t.Fatal(err)
			}
			if b, err := f.ReadAll(ctx, "a/one.txt"); err != nil || string(b) != "first" {
				t.Errorf("ReadAll = %q, %v, want first", b, err)
			}
			if err := f.PutBytes(ctx, "a/one.txt", []byte("second, longer")); err != nil {
				t.Fatal(err)
			}
			if b, err := f.ReadAll(ctx, "a/one.txt"); err != nil || string(b) != "second, longer" {
				t.Errorf("ReadAll after overwrite = %q, %v", b, err)
			}
			if ok, err := f.Exists(ctx, "a/one.txt"); !ok || err != nil {
				t.Errorf("Exists = %v, %v, want true", ok, err)
			}

			// A write that fails leaves nothing, small or past one part,
			// and an overwrite that fails leaves the old file.
			boom := errors.New("boom")
			for _, size := range []int{10, 20 << 20} {
				err := f.Put(ctx, "failed.bin", func(w io.Writer) error {
					if _, err := w.Write(make([]byte, size)); err != nil {
						return err
					}
					return boom
				})
				if !errors.Is(err, boom) {
					t.Errorf("Put(failing write of %d bytes) = %v, want boom", size, err)
				}
				if ok, _ := f.Exists(ctx, "failed.bin"); ok {
					t.Errorf("a failed write of %d bytes left failed.bin", size)
				}
				err = f.Put(ctx, "a/one.txt", func(w io.Writer) error {
					w.Write(make([]byte, size))
					return boom
				})
				if !errors.Is(err, boom) {
					t.Errorf("Put(failing overwrite) = %v", err)
				}
				if b, _ := f.ReadAll(ctx, "a/one.txt"); string(b) != "second, longer" {
					t.Errorf("a failed overwrite of %d bytes changed the file to %d bytes", size, len(b))
				}
			}

			// A large file goes through a multipart upload and reads back.
			big := bytes.Repeat([]byte("0123456789abcdef"), (40<<20)/16+3)
			if err := f.PutBytes(ctx, "big.bin", big); err != nil {
				t.Fatal(err)
			}
			if b, err := f.ReadAll(ctx, "big.bin"); err != nil || !bytes.Equal(b, big) {
				t.Errorf("ReadAll(big) = %d bytes, %v, want %d", len(b), err, len(big))
			}

			// List: byte order, prefix, recursion.
			for _, n := range []string{"b/2", "b/10", "b/1", "B", "bb"} {
				if err := f.PutBytes(ctx, n, []byte(n)); err != nil {
					t.Fatal(err)
				}
			}
			all, err := f.List(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"B", "a/one.txt", "b/1", "b/10", "b/2", "bb", "big.bin"}
			if !slices.Equal(all, want) {
				t.Errorf("List() = %q, want %q", all, want)
			}
			if got, _ := f.List(ctx, "b/"); !slices.Equal(got, []string{"b/1", "b/10", "b/2"}) {
				t.Errorf("List(b/) = %q", got)
			}
			if got, _ := f.List(ctx, "b"); !slices.Equal(got, []string{"b/1", "b/10", "b/2", "bb", "big.bin"}) {
				t.Errorf("List(b) = %q", got)
			}

			// Delete, and delete of a missing file.
			if err := f.Delete(ctx, "b/10"); err != nil {
				t.Fatal(err)
			}
			if err := f.Delete(ctx, "b/10"); err != nil {
				t.Errorf("Delete(missing) = %v", err)
			}
			if got, _ := f.List(ctx, "b/"); !slices.Equal(got, []string{"b/1", "b/2"}) {
				t.Errorf("List(b/) after Delete = %q", got)
			}

			// A second Folder on the parent prefix sees the files under
			// the child's prefix, and not the other way.
			if l.name != "local" {
				parent := open(t, strings.TrimSuffix(loc, "/prefix"))
				if got, _ := parent.List(ctx, "prefix/b/"); !slices.Equal(got, []string{"prefix/b/1", "prefix/b/2"}) {
					t.Errorf("parent List(prefix/b/) = %q", got)
				}
				if err := parent.PutBytes(ctx, "prefixed", []byte("x")); err != nil {
					t.Fatal(err)
				}
				if got, _ := f.List(ctx, ""); slices.Contains(got, "ed") || len(got) != 6 {
					t.Errorf("List() after a sibling with the same prefix = %q", got)
				}
			}
		})
	}
}

// TestListPages lists more objects than one page of a listing holds (1000
// on S3 and GCS).
func TestListPages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for _, l := range locations {
		t.Run(l.name, func(t *testing.T) {
			f := open(t, l.loc(t))
			ctx := context.Background()
			const n = 1100
			var want []string
			var mu sync.Mutex
			var firstErr error
			var wg sync.WaitGroup
			sem := make(chan struct{}, 16)
			for i := range n {
				name := fmt.Sprintf("many/%05d", i)
				want = append(want, name)
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					if err := f.PutBytes(ctx, name, []byte(name)); err != nil {
						mu.Lock()
						firstErr = cmpErr(firstErr, err)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if firstErr != nil {
				t.Fatal(firstErr)
			}
			got, err := f.List(ctx, "many/")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("List found %d names, want %d", len(got), len(want))
			}
		})
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// deadAddr is a loopback address where nothing listens.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// openFails opens loc, wants an error containing every one of want, and
// within 15 seconds.
func openFails(t *testing.T, loc string, want ...string) {
	t.Helper()
	start := time.Now()
	f, err := objstore.Open(context.Background(), loc)
	took := time.Since(start)
	if err == nil {
		f.Close()
		t.Fatalf("Open(%s) succeeded, want an error", loc)
	}
	for _, w := range append(want, loc) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Open(%s) = %v, want it to contain %q", loc, err, w)
		}
	}
	if took > 15*time.Second {
		t.Errorf("Open(%s) took %v to fail", loc, took)
	}
}

func TestS3Errors(t *testing.T) {
	s := objstoretest.S3(t)
	s.Env(t)
	bucket := s.Bucket(t)
	t.Run("missing bucket", func(t *testing.T) {
		openFails(t, "s3://no-such-bucket/x", `bucket "no-such-bucket" does not exist`)
	})
	t.Run("bad credentials", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
		openFails(t, "s3://"+bucket+"/x", "credentials were refused", "AWS_SECRET_ACCESS_KEY")
	})
	t.Run("unknown key", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
		openFails(t, "s3://"+bucket+"/x", "credentials were refused")
	})
	t.Run("no credentials", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		openFails(t, "s3://"+bucket+"/x", "AWS credentials")
	})
	t.Run("unreachable endpoint", func(t *testing.T) {
		addr := deadAddr(t)
		t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+addr)
		openFails(t, "s3://"+bucket+"/x", "cannot reach", addr, "AWS_ENDPOINT_URL_S3")
	})
	t.Run("no bucket", func(t *testing.T) {
		openFails(t, "s3://", "no bucket")
	})
}

func TestGCSErrors(t *testing.T) {
	s := objstoretest.GCS(t)
	s.Env(t)
	t.Run("missing bucket", func(t *testing.T) {
		openFails(t, "gs://no-such-bucket/x", `bucket "no-such-bucket" does not exist`, "STORAGE_EMULATOR_HOST")
	})
	t.Run("unreachable emulator", func(t *testing.T) {
		addr := deadAddr(t)
		t.Setenv("STORAGE_EMULATOR_HOST", addr)
		openFails(t, "gs://bucket/x", "cannot reach", addr)
	})
}
