package corpus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
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
		got, _, ok := GzipSize(c.path)
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
		size, _, ok := GzipSize(write(t, "real.gz", z))
		switch {
		case two && ok:
			t.Fatalf("two members of %d bytes: size %d, want none", len(data), size)
		case !two && (!ok || size != int64(len(data))):
			t.Fatalf("one member of %d bytes: size %d (ok %v), want %d", len(data), size, ok, len(data))
		}
	})
}

// wordText is JSONL of random words from a vocabulary of 4,000: text
// that gzip compresses about 3 times, like prose, with no long repeats.
func wordText(size int) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	vocab := make([]string, 4000)
	for i := range vocab {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = "etaoinshrdlcumwfgypbvkjxqz"[min(r.IntN(26), r.IntN(26))]
		}
		vocab[i] = string(w)
	}
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "{\"id\":\"d%07d\",\"text\":\"", i)
		for range 20 + r.IntN(200) {
			b.WriteString(vocab[r.IntN(len(vocab))])
			b.WriteByte(' ')
		}
		b.WriteString("\"}\n")
	}
	return b.Bytes()
}

// gzipIndependent is data as one gzip member of independent deflate
// blocks, as pigz --independent writes: each block of blockSize bytes is
// compressed with a fresh dictionary and ends in a sync flush.
func gzipIndependent(t *testing.T, data []byte, blockSize int) []byte {
	t.Helper()
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}
	for lo := 0; lo < len(data); lo += blockSize {
		var b bytes.Buffer
		fw, err := flate.NewWriter(&b, flate.DefaultCompression)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(data[lo:min(lo+blockSize, len(data))]); err != nil {
			t.Fatal(err)
		}
		if err := fw.Flush(); err != nil { // a sync flush: not the final block
			t.Fatal(err)
		}
		out = append(out, b.Bytes()...)
	}
	out = append(out, 3, 0) // an empty final block
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
	return binary.LittleEndian.AppendUint32(out, uint32(len(data)))
}

// gzipSplit is data as gzip members of the sizes in sizes, cycled.
func gzipSplit(t *testing.T, data []byte, sizes ...int) []byte {
	t.Helper()
	var out []byte
	for lo, k := 0, 0; lo < len(data); k++ {
		hi := min(lo+sizes[k%len(sizes)], len(data))
		out = append(out, gzipOf(t, data[lo:hi])...)
		lo = hi
	}
	return out
}

var largeMemberOnce struct {
	sync.Once
	data, gz []byte
}

// largeMember is wordText and its gzip member, about 4.6 MiB: past the
// head that GzipSize decodes. Made once for the tests that use it.
func largeMember(t *testing.T) (data, gz []byte) {
	t.Helper()
	m := &largeMemberOnce
	m.Do(func() {
		m.data = wordText(11 << 20)
		m.gz = gzipOf(t, m.data)
	})
	if len(m.gz) <= headBytes {
		t.Fatalf("the member is %d bytes compressed: the test needs more than the head's %d", len(m.gz), headBytes)
	}
	return m.data, m.gz
}

// TestGzipSizeMembers: the size a memory plan takes from GzipSize (its
// size, else its head's ratio times the compressed size) is exact for a
// file of one member, also one of independent blocks (pigz
// --independent), and not under 90% of the size for a file of several
// members: two, three or four large ones (each past the 4 MiB head, so
// that the trailer states a half, a third or a quarter of the size),
// bgzip's 64 KiB blocks with its empty last member, and a web archive's
// member per record.
func TestGzipSizeMembers(t *testing.T) {
	dir := t.TempDir()
	data, one := largeMember(t)
	n := int64(len(data))
	small := data[:6<<20] // many small members: past the head is enough
	for _, c := range []struct {
		name  string
		file  []byte
		size  int64
		exact bool
	}{
		{"one member", one, n, true},
		{"independent blocks", gzipIndependent(t, data, 128<<10), n, true},
		{"two members", bytes.Repeat(one, 2), 2 * n, false},
		{"three members", bytes.Repeat(one, 3), 3 * n, false},
		{"four members", bytes.Repeat(one, 4), 4 * n, false},
		{"bgzip blocks", append(gzipSplit(t, small, 64<<10), gzipOf(t, nil)...), int64(len(small)), false},
		{"web archive records", gzipSplit(t, small, 3000, 40000, 700, 9000), int64(len(small)), false},
	} {
		path := filepath.Join(dir, "f.gz")
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		size, headRatio, ok := GzipSize(path)
		est := size
		if !ok {
			est = int64(headRatio * float64(len(c.file)))
		}
		switch {
		case c.exact && (!ok || size != c.size):
			t.Errorf("%s: GzipSize = %d, %v; want %d, true", c.name, size, ok, c.size)
		case !c.exact && (est < c.size/10*9 || est > c.size/10*11):
			t.Errorf("%s: estimated %d bytes (GzipSize %d, %v; head's ratio %.3f); want %d within 10%%", c.name, est, size, ok, headRatio, c.size)
		}
	}
}

// TestGzipSizeHeadRatio: GzipSize's headRatio, from the decoding that
// finds the first member's end, is CompressionRatio's number on every
// kind of file, and the exact ratio where the head is the whole file.
func TestGzipSizeHeadRatio(t *testing.T) {
	dir := t.TempDir()
	small := unevenText(2000)
	big, whole := largeMember(t)
	var zb bytes.Buffer
	zw, err := zstd.NewWriter(&zb)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(small)
	zw.Close()
	for _, c := range []struct {
		name  string
		file  []byte
		exact float64 // the ratio, when the head is the whole file; 0 when not
	}{
		{"one small member", gzipOf(t, small), float64(len(small))},
		{"one large member", whole, 0},
		{"two large members", bytes.Repeat(whole, 2), 0},
		{"many small members", gzipSplit(t, small, 5000, 300), float64(len(small))},
		{"many members past the head", gzipSplit(t, big[:6<<20], 64<<10), 0},
		{"cut short", whole[:len(whole)/2], 0},
		{"zstd", zb.Bytes(), float64(len(small))},
		{"not compressed", small, float64(len(small))},
	} {
		path := filepath.Join(dir, "f.gz")
		if err := os.WriteFile(path, c.file, 0o644); err != nil {
			t.Fatal(err)
		}
		_, got, _ := GzipSize(path)
		want, err := CompressionRatio(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: GzipSize's head ratio %v, CompressionRatio %v", c.name, got, want)
		}
		if c.exact > 0 && got != c.exact/float64(len(c.file)) {
			t.Errorf("%s: head ratio %v, want %v (the whole file)", c.name, got, c.exact/float64(len(c.file)))
		}
	}
}
