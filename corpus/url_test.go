package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/objstoretest"
)

// TestURLTruncatedSize: a gzip or zstd object cut short, read from S3 or
// GCS, was worded without its size ("reading stopped at compressed
// offset 7580"), a local file with it ("of 15160 (7580 bytes unread)"):
// the size the download's answer gives is now the file's.
func TestURLTruncatedSize(t *testing.T) {
	var docs bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&docs, "{\"id\":\"d%d\",\"text\":\"document %d says %x\"}\n", i, i, i*7919)
	}
	var zb bytes.Buffer
	zw, err := zstd.NewWriter(&zb)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(docs.Bytes())
	zw.Close()
	gz := gzipOf(t, docs.Bytes())
	for _, store := range []struct {
		name string
		loc  func(t *testing.T) string
	}{
		{"s3", func(t *testing.T) string {
			s := objstoretest.S3(t)
			s.Env(t)
			return "s3://" + s.Bucket(t)
		}},
		{"gcs", func(t *testing.T) string {
			s := objstoretest.GCS(t)
			s.Env(t)
			return "gs://" + s.Bucket(t)
		}},
	} {
		t.Run(store.name, func(t *testing.T) {
			loc := store.loc(t)
			for _, c := range []struct {
				name string
				data []byte
				want string
			}{
				{"docs.jsonl.gz", gz[:len(gz)/2], fmt.Sprintf(" of %d (%d bytes unread)", len(gz)/2, 0)},
				{"docs.jsonl.zst", zb.Bytes()[:zb.Len()/2], fmt.Sprintf(" of %d; reading stopped in that frame", zb.Len()/2)},
			} {
				url := loc + "/" + c.name
				w, err := objstore.CreateURL(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				w.Write(c.data)
				if err := w.Commit(); err != nil {
					t.Fatal(err)
				}
				// Read whole, and from a start position as a staged
				// task reads (a ranged read).
				comp := map[bool]string{true: "gzip", false: "zstd"}[strings.HasSuffix(c.name, ".gz")]
				for _, opts := range []Options{{}, {Start: Position{Compression: comp}}} {
					r, err := Open(url, opts)
					if err != nil {
						t.Fatal(err)
					}
					for r.Next() {
					}
					err = r.Err()
					r.Close()
					if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
						t.Errorf("%s cut short (start %+v): %v, want ErrCorrupt saying %q", url, opts.Start, err, c.want)
					}
				}
			}
		})
	}
}
