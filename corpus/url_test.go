package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/objstoretest"
)

// urlStores start the S3 server and the GCS emulator and return a fresh
// bucket's URL.
var urlStores = []struct {
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
}

// putURL writes data to the object url.
func putURL(t *testing.T, url string, data []byte) {
	t.Helper()
	w, err := objstore.CreateURL(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestPositionObjectChanged: a Position taken in an object on S3 or GCS
// records the object's size, and a reader started at it refuses the
// object once it has another size (a line written before the Position
// moves every line after it), naming the object and both sizes, as it
// refuses a local file (TestPositionFileChanged). Before, the check was
// made for local files only: the object was read from a byte that was no
// longer a line's start (here the middle of a document's line).
func TestPositionObjectChanged(t *testing.T) {
	data := positionLines(false)
	for _, store := range urlStores {
		t.Run(store.name, func(t *testing.T) {
			url := store.loc(t) + "/docs.jsonl"
			putURL(t, url, data)
			_, ps, _ := events(t, url, Options{MaxDocBytes: 120})
			if len(ps) < 2 {
				t.Fatalf("%d positions", len(ps))
			}
			p := ps[len(ps)/2]
			if p.Size != int64(len(data)) {
				t.Fatalf("position size %d, want the object's %d", p.Size, len(data))
			}
			// Unchanged, the object is read from the position.
			if ev, _, _ := events(t, url, Options{MaxDocBytes: 120, Start: p}); len(ev) == 0 || strings.HasPrefix(ev[len(ev)-1], "err ") {
				t.Fatalf("read from %+v: %q", p, ev)
			}
			changed := append([]byte("{\"id\":\"new\",\"text\":\"a line before\"}\n"), data...)
			putURL(t, url, changed)
			_, err := Open(url, Options{MaxDocBytes: 120, Start: p})
			if err == nil || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "changed") ||
				!strings.Contains(err.Error(), human.Number(len(data))) || !strings.Contains(err.Error(), human.Number(len(changed))) {
				t.Fatalf("open at %+v of a changed object: %v, want an error naming it, both sizes and the change", p, err)
			}
		})
	}
}

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
	for _, store := range urlStores {
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
