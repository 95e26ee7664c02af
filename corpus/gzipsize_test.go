package corpus

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// gzipOf is data compressed as one gzip member.
func gzipOf(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGzipSize: GzipSize's rule (see its comment) on one member smaller
// than the head (decoded: exact), one member larger whose head says half
// its size (unevenText: ISIZE, above the head's estimate, is taken), and
// the files whose trailer does not give the size: two members, many
// small members, a member cut short, a file that is not gzip.
func TestGzipSize(t *testing.T) {
	dir := t.TempDir()
	small := unevenText(2000)   // 2 MB, under 1 MiB compressed
	uneven := unevenText(16000) // 16 MB: the head holds its random half only
	write := func(name string, parts ...[]byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, bytes.Join(parts, nil), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	whole := gzipOf(t, uneven)
	var members [][]byte
	for lo := 0; lo < len(uneven); lo += 64 << 10 {
		members = append(members, gzipOf(t, uneven[lo:min(lo+64<<10, len(uneven))]))
	}
	for _, c := range []struct {
		name   string
		path   string
		want   int64
		wantOK bool
	}{
		{"one small member", write("small.gz", gzipOf(t, small)), int64(len(small)), true},
		{"one large member", write("uneven.gz", whole), int64(len(uneven)), true},
		{"two small members", write("two.gz", gzipOf(t, small), gzipOf(t, small[:1000])), 0, false},
		{"many small members", write("many.gz", members...), 0, false},
		{"cut short", write("cut.gz", whole[:len(whole)-1000]), 0, false},
		{"not gzip", write("plain.gz", uneven[:1<<20]), 0, false},
	} {
		got, ok := GzipSize(c.path)
		if got != c.want || ok != c.wantOK {
			t.Errorf("%s: GzipSize = %d, %v; want %d, %v", c.name, got, ok, c.want, c.wantOK)
		}
	}
	// The head's ratio says about half the uneven file's size, which is
	// why the trailer matters.
	ratio, err := CompressionRatio(filepath.Join(dir, "uneven.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if byHead := ratio * float64(len(whole)); byHead > 0.7*float64(len(uneven)) {
		t.Errorf("the head's ratio gives %.0f bytes of %d: the test meant a head unlike the rest", byHead, len(uneven))
	}
}

// FuzzGzipSize: GzipSize never panics on any bytes; on one gzip member
// of any text (the fuzz input; its member ends within the head) it gives
// the text's exact size, and on two members it gives no size.
func FuzzGzipSize(f *testing.F) {
	f.Add([]byte(`{"id":"a","text":"hello world"}`+"\n"), false)
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 1, 2, 3, 4, 5, 6, 7, 8}, true)
	f.Add(bytes.Repeat([]byte("abc "), 100000), true)
	dir := f.TempDir()
	write := func(t *testing.T, name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.Fuzz(func(t *testing.T, data []byte, two bool) {
		GzipSize(write(t, "any.gz", data)) // must not panic
		z := gzipOf(t, data)
		if two {
			z = append(z, gzipOf(t, data)...)
		}
		size, ok := GzipSize(write(t, "real.gz", z))
		switch {
		case two && ok:
			t.Fatalf("two members of %d bytes: size %d, want none", len(data), size)
		case !two && (!ok || size != int64(len(data))):
			t.Fatalf("one member of %d bytes: size %d (ok %v), want %d", len(data), size, ok, len(data))
		}
	})
}
