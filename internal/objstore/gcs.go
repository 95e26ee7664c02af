//go:build !neardup_nogcs

// The gs:// backend; build with -tags neardup_nogcs to leave it (and most of
// the binary size that object storage adds) out.

package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

func init() { openers["gs"] = openGCS }

// gcsChunkSize is the piece of a resumable upload buffered in memory.
const gcsChunkSize = 16 << 20

// gcsBackend is a prefix of a Google Cloud Storage bucket, or of a bucket
// of the emulator named by STORAGE_EMULATOR_HOST.
type gcsBackend struct {
	loc    string
	bucket string
	prefix string // "" or ending in "/"
	client *storage.Client
	b      *storage.BucketHandle
}

func openGCS(ctx context.Context, rawURL string) (backend, error) {
	bucket, prefix, err := splitBucketURL(rawURL, "gs")
	if err != nil {
		return nil, err
	}
	// NewClient finds the application default credentials, or talks
	// without credentials to STORAGE_EMULATOR_HOST when it is set.
	client, err := storage.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("no usable Google credentials (run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file): %w", err)
	}
	b := &gcsBackend{loc: rawURL, bucket: bucket, prefix: prefix, client: client}
	b.b = client.Bucket(bucket).Retryer(
		storage.WithMaxAttempts(maxAttempts),
		storage.WithBackoff(gax.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}),
		storage.WithPolicy(storage.RetryIdempotent))
	// One listing of at most one object checks the endpoint, the
	// credentials and the bucket now, with a clear error.
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	it := b.b.Objects(cctx, &storage.Query{Prefix: prefix})
	it.PageInfo().MaxSize = 1
	if _, err := it.Next(); err != nil && !errors.Is(err, iterator.Done) {
		client.Close()
		return nil, b.explain(err)
	}
	return b, nil
}

func (b *gcsBackend) key(name string) string { return b.prefix + name }

// explain turns a client error into one that says what to fix, wrapping it.
func (b *gcsBackend) explain(err error) error {
	if errors.Is(err, storage.ErrBucketNotExist) {
		return fmt.Errorf("bucket %q does not exist (create it, or check the URL%s): %w", b.bucket, emulatorHint(), err)
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusNotFound:
			return fmt.Errorf("bucket %q does not exist (create it, or check the URL%s): %w", b.bucket, emulatorHint(), err)
		case http.StatusUnauthorized:
			return fmt.Errorf("the Google credentials were refused (check GOOGLE_APPLICATION_CREDENTIALS, or run `gcloud auth application-default login`): %w", err)
		case http.StatusForbidden:
			return fmt.Errorf("access denied to gs://%s/%s (check that the credentials may list, read and write this bucket): %w", b.bucket, b.prefix, err)
		}
	}
	if strings.Contains(err.Error(), "oauth2") || strings.Contains(err.Error(), "credentials") {
		return fmt.Errorf("no usable Google credentials (run `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS): %w", err)
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) || errors.Is(err, context.DeadlineExceeded) {
		where := "Google Cloud Storage"
		if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
			where = "the storage emulator at " + h + " (STORAGE_EMULATOR_HOST)"
		}
		return fmt.Errorf("cannot reach %s: check the network: %w", where, err)
	}
	return err
}

func emulatorHint() string {
	if h := os.Getenv("STORAGE_EMULATOR_HOST"); h != "" {
		return "; STORAGE_EMULATOR_HOST is " + h
	}
	return ""
}

func (b *gcsBackend) open(ctx context.Context, name string) (io.ReadCloser, error) {
	r, err := b.b.Object(b.key(name)).NewReader(ctx)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return nil, fmt.Errorf("%w (%v)", ErrNotExist, err)
		}
		return nil, b.explain(err)
	}
	return newStream(r), nil
}

func (b *gcsBackend) put(ctx context.Context, name string, write func(io.Writer) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One upload (resumable in chunks beyond gcsChunkSize): the object
	// appears when Close finalises it, never when the context was
	// cancelled first.
	w := b.b.Object(b.key(name)).NewWriter(ctx)
	w.ChunkSize = gcsChunkSize
	if err := write(w); err != nil {
		cancel()
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return b.explain(err)
	}
	return nil
}

func (b *gcsBackend) exists(ctx context.Context, name string) (bool, error) {
	_, err := b.b.Object(b.key(name)).Attrs(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return false, nil
	}
	if err != nil {
		return false, b.explain(err)
	}
	return true, nil
}

func (b *gcsBackend) list(ctx context.Context, prefix string) ([]string, error) {
	var names []string
	q := &storage.Query{Prefix: b.key(prefix)}
	if err := q.SetAttrSelection([]string{"Name"}); err != nil {
		return nil, err
	}
	it := b.b.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return nil, b.explain(err)
		}
		if strings.HasSuffix(a.Name, "/") { // a folder marker
			continue
		}
		names = append(names, strings.TrimPrefix(a.Name, b.prefix))
	}
	return names, nil
}

func (b *gcsBackend) remove(ctx context.Context, name string) error {
	err := b.b.Object(b.key(name)).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return b.explain(err)
	}
	return nil
}

func (b *gcsBackend) close() error { return b.client.Close() }
