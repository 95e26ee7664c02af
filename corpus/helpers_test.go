package corpus

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// doc is the comparable part of a Document.
type doc struct {
	ID, Text, Raw string
	Record        int64
}

// readAll reads every document of r, copying them, and returns the error
// that stopped it.
func readAll(r Reader) ([]doc, error) {
	var docs []doc
	for r.Next() {
		d := r.Doc()
		docs = append(docs, doc{ID: d.ID, Text: d.Text, Raw: string(d.Raw), Record: d.Record})
	}
	err := r.Err()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return docs, err
}

// readFile opens and reads a whole file.
func readFile(t testing.TB, name string, opts Options) ([]doc, error) {
	t.Helper()
	r, err := Open(name, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	return readAll(r)
}

// compress returns data compressed as the name's suffix says.
func compressFor(t testing.TB, name string, data []byte) []byte {
	t.Helper()
	_, comp := splitCompression(strings.ToLower(filepath.Base(name)))
	var b bytes.Buffer
	switch comp {
	case compGzip:
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case compZstd:
		w, _ := zstd.NewWriter(&b)
		w.Write(data)
		w.Close()
	default:
		return data
	}
	return b.Bytes()
}

// writeFile writes data, compressed as the name says, to dir/name.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, compressFor(t, name, data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
