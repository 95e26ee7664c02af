package corpus

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// unevenText is JSONL whose first part (random letters) compresses about
// 1.7 times and whose second part (one repeated line) compresses hundreds
// of times: a head's ratio says nothing of the whole.
func unevenText(records int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for i := range records {
		text := make([]byte, 1000)
		for j := range text {
			if i < records/2 {
				text[j] = "abcdefghijklmnopqrstuvwxyz "[r.IntN(27)]
			} else {
				text[j] = 'a'
			}
		}
		fmt.Fprintf(&b, "{\"id\":\"d%06d\",\"text\":\"%s\"}\n", i, text)
	}
	return b.Bytes()
}

// writeZstd writes data with klauspost's stream encoder, as benchcorpus
// does (no content size; full 128 KiB blocks), and with a flush every
// flushEvery bytes when that is not 0 (each flush ends a block short).
func writeZstd(t *testing.T, path string, data []byte, flushEvery int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw, err := zstd.NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	for len(data) > 0 {
		n := len(data)
		if flushEvery > 0 {
			n = min(n, flushEvery)
		}
		if _, err := zw.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		if flushEvery > 0 {
			if err := zw.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		data = data[n:]
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDecompressedSize: the size from the block headers is within a block
// of the real one where the head's ratio is off by half; a frame's stated
// content size is exact; blocks cut short (a flush every 16 KiB) and a
// file that is not zstd give no size.
func TestDecompressedSize(t *testing.T) {
	dir := t.TempDir()
	data := unevenText(16000) // 16 MB: a head of 4 MiB compressed is random letters only
	stream := filepath.Join(dir, "stream.jsonl.zst")
	writeZstd(t, stream, data, 0)
	size, window, ok := DecompressedSize(stream)
	if !ok || size < int64(len(data)) || size > int64(len(data))+128<<10 {
		t.Errorf("stream: %d bytes (ok %v), want %d to 128 KiB more", size, ok, len(data))
	}
	if window != 8<<20 {
		t.Errorf("stream: window %d, want 8 MiB (the encoder's default)", window)
	}
	ratio, err := CompressionRatio(stream)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(stream)
	if err != nil {
		t.Fatal(err)
	}
	if byRatio := ratio * float64(st.Size()); byRatio > 0.75*float64(len(data)) {
		t.Errorf("the head's ratio gives %.0f bytes of %d: the test's file does not tell the two apart", byRatio, len(data))
	}

	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(dir, "whole.jsonl.zst")
	if err := os.WriteFile(whole, enc.EncodeAll(data, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if size, _, ok := DecompressedSize(whole); !ok || size != int64(len(data)) {
		t.Errorf("a frame with its content size: %d bytes (ok %v), want %d", size, ok, len(data))
	}

	flushed := filepath.Join(dir, "flushed.jsonl.zst")
	writeZstd(t, flushed, data, 16<<10)
	if size, _, ok := DecompressedSize(flushed); ok {
		t.Errorf("blocks of 16 KiB: %d bytes, want no size (the head checks the assumption)", size)
	}

	plain := filepath.Join(dir, "plain.jsonl")
	if err := os.WriteFile(plain, data[:1<<20], 0o644); err != nil {
		t.Fatal(err)
	}
	if size, window, ok := DecompressedSize(plain); ok || window != 0 {
		t.Errorf("not zstd: %d bytes, window %d (ok %v), want none", size, window, ok)
	}
}

// FuzzWalkZstd: the block-header walk never panics on any bytes, and on a
// real zstd stream of any text (the fuzz input, compressed whole or with
// a content size) it succeeds and never counts less than the text: stated
// sizes are exact and a compressed block counts the most it may hold.
func FuzzWalkZstd(f *testing.F) {
	f.Add([]byte(`{"id":"a","text":"hello world"}`+"\n"), false)
	f.Add(bytes.Repeat([]byte("abc "), 100000), true)
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false)
	sized, err := zstd.NewWriter(nil) // EncodeAll states the content size
	if err != nil {
		f.Fatal(err)
	}
	stream, err := zstd.NewWriter(nil) // a stream's frame does not
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, withSize bool) {
		walkZstd(bytes.NewReader(data), int64(len(data)), 1<<10) // must not panic
		var z []byte
		if withSize {
			z = sized.EncodeAll(data, nil)
		} else {
			var b bytes.Buffer
			stream.Reset(&b)
			if _, err := stream.Write(data); err != nil {
				t.Fatal(err)
			}
			if err := stream.Close(); err != nil {
				t.Fatal(err)
			}
			z = b.Bytes()
		}
		all, _, ok := walkZstd(bytes.NewReader(z), int64(len(z)), 1<<10)
		if !ok {
			t.Fatalf("a real zstd stream of %d bytes (%d compressed) not walked", len(data), len(z))
		}
		if got := all.known + all.assumed; got < int64(len(data)) {
			t.Fatalf("counted %d bytes of %d", got, len(data))
		}
	})
}
