package objstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/neardup/neardup/internal/objstoretest"
)

// TestPutErrors: an error of Put's write function itself (a bad input
// record, say) comes back as it is; an error of storage names the file,
// once, even from a Put inside another Put's write function, and wraps
// its cause.
func TestPutErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := open(t, dir)
	errBad := errors.New("in.jsonl:3: invalid JSON")
	err := f.Put(ctx, "a", func(w io.Writer) error {
		w.Write([]byte("part"))
		return errBad
	})
	if err == nil || err.Error() != errBad.Error() || !errors.Is(err, errBad) {
		t.Errorf("Put whose write fails = %v, want %v as it is", err, errBad)
	}
	if ok, _ := f.Exists(ctx, "a"); ok {
		t.Errorf("a failed Put left its file")
	}
	// A file where a folder should be: storage fails.
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(dir, "x", "y")
	err = f.Put(ctx, "a", func(w io.Writer) error {
		return f.Put(ctx, "x/y", func(w io.Writer) error { return nil })
	})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if !strings.HasPrefix(msg, "write "+inner+": ") || strings.Count(msg, inner) != 1 || strings.Contains(msg, filepath.Join(dir, "a")) || !strings.Contains(msg, "not a directory") {
		t.Errorf("a Put inside a Put failing on storage = %q, want the inner file named once, the outer not", msg)
	}
}

// TestS3UploadRefused: an S3 server that lists the bucket but refuses the
// multipart upload of a large object: Put fails with the server's refusal
// explained (access denied, naming the URL), not with the writer's "the
// upload ended", and nothing is left.
func TestS3UploadRefused(t *testing.T) {
	var uploads atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
			w.Header().Set("Content-Type", "application/xml")
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>`)
		default:
			uploads.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		}
	}))
	defer ts.Close()
	(&objstoretest.S3Server{Endpoint: ts.URL, AccessKey: "k", SecretKey: "s", Region: "us-east-1"}).Env(t)
	f := open(t, "s3://b/prefix")
	chunk := make([]byte, 1<<20)
	err := f.Put(context.Background(), "big", func(w io.Writer) error {
		for range 40 {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "write s3://b/prefix/big: access denied to s3://b/prefix/") || strings.Contains(err.Error(), "upload ended") {
		t.Errorf("a refused upload = %v, want the refusal explained", err)
	}
	if uploads.Load() == 0 {
		t.Errorf("no upload was tried")
	}
}
