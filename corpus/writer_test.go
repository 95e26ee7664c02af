package corpus

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyAll reads src and writes every document to dst.
func copyAll(t *testing.T, src, dst string) {
	t.Helper()
	r, err := Open(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for r.Next() {
		if err := w.Write(r.Doc()); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("read %s: %v", src, err)
	}
	r.Close()
	if err := w.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func TestJSONLWriterRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte(jsonlSample))
	want, err := readFile(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"out.jsonl", "out.jsonl.gz", "out.json.zst"} {
		t.Run(out, func(t *testing.T) {
			dst := filepath.Join(dir, out)
			copyAll(t, src, dst)
			got, err := readFile(t, dst, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want[2].ID, got[2].ID = "", "" // FILE:LINE differs
			for i := range got {
				got[i].Record, want[i].Record = 0, 0
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("round trip through %s:\n got %v\nwant %v", out, got, want)
			}
		})
	}
}

func TestWriterRawMissingOrMultiline(t *testing.T) {
	dst := filepath.Join(t.TempDir(), "o.jsonl")
	w, err := Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&Document{ID: "x", Text: "no raw \"here\""})
	w.Write(&Document{ID: "y", Raw: []byte("{\n  \"id\": \"y\",\n  \"text\": \"t\"\n}")})
	if err := w.Write(&Document{ID: "z", Raw: []byte("{\n bad")}); err == nil {
		t.Error("Write with a multi-line Raw that is not JSON succeeded")
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(dst)
	want := `{"id":"x","text":"no raw \"here\""}` + "\n" + `{"id":"y","text":"t"}` + "\n"
	if string(b) != want {
		t.Errorf("wrote %q, want %q", b, want)
	}
}

func TestWriterAbort(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "a.jsonl.gz", "a.jsonl.zst"} {
		w, err := Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(&Document{ID: "x", Text: "t"})
		if err := w.Abort(); err != nil {
			t.Errorf("%s: Abort: %v", name, err)
		}
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("after Abort the directory holds %d entries, want none", len(es))
	}
}

func TestWriterDevNull(t *testing.T) {
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("no /dev/null")
	}
	w, err := Create("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&Document{ID: "x", Text: "t"})
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeDevice == 0 {
		t.Errorf("/dev/null is no longer a device: %v %v", st.Mode(), err)
	}
}

func TestCompressionRatio(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "{\"id\":%d,\"text\":\"line %d of a fairly repetitive corpus\"}\n", i, i%100)
	}
	data := []byte(b.String())
	// A file whose compressed size is over the 4 MiB sample: random hex
	// compresses about twofold.
	rng := rand.New(rand.NewPCG(1, 2))
	var big strings.Builder
	for big.Len() < 12<<20 {
		fmt.Fprintf(&big, "{\"text\":\"%x %x %x\"}\n", rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	writeFile(t, dir, "big.jsonl.zst", []byte(big.String()))
	for _, name := range []string{"a.jsonl", "a.jsonl.gz", "a.jsonl.zst", "big.jsonl.zst"} {
		p, size := filepath.Join(dir, name), len(big.String())
		if name != "big.jsonl.zst" {
			p, size = writeFile(t, dir, name, data), len(data)
		}
		st, _ := os.Stat(p)
		got, err := CompressionRatio(p)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(size) / float64(st.Size())
		if got < want*0.8 || got > want*1.25 {
			t.Errorf("%s: ratio %.2f, want about %.2f", name, got, want)
		}
	}
}

// TestWriteLinesIsWrite: lines made with AppendLine and written with
// WriteLines give the file that Write gives, for every compression.
func TestWriteLinesIsWrite(t *testing.T) {
	docs := []Document{
		{ID: "x", Text: "no raw \"here\""},
		{ID: "y", Raw: []byte("{\n  \"id\": \"y\",\n  \"text\": \"t\"\n}")},
		{Raw: []byte(`{"id":"z","text":"plain"}`)},
	}
	dir := t.TempDir()
	for _, name := range []string{"a.jsonl", "a.jsonl.gz", "a.jsonl.zst"} {
		var files [2][]byte
		for k, way := range []string{"write", "lines"} {
			path := filepath.Join(dir, way+"-"+name)
			w, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			var lines []byte
			for _, d := range docs {
				if way == "write" {
					err = w.Write(&d)
				} else {
					lines, err = AppendLine(lines, &d)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if way == "lines" {
				lw, ok := w.(LineWriter)
				if !ok {
					t.Fatalf("%s: the writer of %T is no LineWriter", name, w)
				}
				if err := lw.WriteLines(lines); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			if files[k], err = os.ReadFile(path); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(files[0], files[1]) {
			t.Errorf("%s: WriteLines wrote %d bytes unlike Write's %d", name, len(files[1]), len(files[0]))
		}
	}
}
