package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/text"
)

// TestReadOptionsOf: the workers read with the corpus options `neardup
// dedup` reads with (dedup.Options.ReaderOptions): under --html the web
// archive readers keep the main content (HTMLMain), under --html-all the
// whole page, and without --html the text as it is.
func TestReadOptionsOf(t *testing.T) {
	for _, tc := range []struct {
		name      string
		html, all bool
		want      bool
	}{
		{"plain", false, false, false},
		{"html", true, false, true},
		{"html-all", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			norm := text.DefaultOptions()
			norm.HTML, norm.HTMLAll = tc.html, tc.all
			opts := Options{TextField: "body", IDField: "url", MaxDocBytes: 1 << 20}
			opts.Config.Method = "minhash"
			opts.Config.Spec.Normalize = &norm
			got, err := readOptionsOf(opts)
			if err != nil {
				t.Fatal(err)
			}
			want, err := opts.Config.ReaderOptions(corpus.Options{TextField: "body", IDField: "url", MaxDocBytes: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if c := got.corpus(nil); c.HTMLMain != tc.want || c.HTMLMain != want.HTMLMain || c.TextField != want.TextField || c.IDField != want.IDField || c.MaxDocBytes != want.MaxDocBytes {
				t.Errorf("reader options %+v, want %+v (HTMLMain %v)", c, want, tc.want)
			}
		})
	}
}

// TestDamagedStreamWords: a cut gzip or zstd input stops the job in
// `neardup dedup`'s words, the file's size and the bytes never read
// included ("reading stopped at compressed offset 7580 of 7580 (0 bytes
// unread)"); the pipeline's stream reader knew no size and left them out.
func TestDamagedStreamWords(t *testing.T) {
	var plain bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&plain, "{\"id\":\"d%d\",\"text\":\"word%d and other words %d\"}\n", i, i, i*7919%1000)
	}
	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(plain.Bytes())
	gw.Close()
	zb, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zs := zb.EncodeAll(plain.Bytes(), nil)
	dir := t.TempDir()
	for name, b := range map[string][]byte{"cut.jsonl.gz": gz.Bytes(), "cut.jsonl.zst": zs} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
			t.Fatal(err)
		}
		readAll := func(r corpus.Reader) error {
			for r.Next() {
			}
			return r.Err()
		}
		r, closeR, err := openDocs(context.Background(), path, corpus.Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(r)
		closeR()
		d, err := corpus.Open(path, corpus.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := readAll(d)
		d.Close()
		if got == nil || want == nil || got.Error() != want.Error() || !strings.Contains(want.Error(), fmt.Sprintf(" of %d", len(b)/2)) {
			t.Errorf("%s: the pipeline says\n%v\nwant neardup dedup's\n%v", name, got, want)
		}
	}
}
