package corpus

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/human"
)

// TestTooLargeNamesLengthAndLimit: a line over MaxDocBytes is reported
// with its length and the limit, alike for plain text and JSONL (plain
// text said only "record exceeds the size limit"), also when its "\r\n"
// is split between two reads of the line reader's 1 MiB buffer.
func TestTooLargeNamesLengthAndLimit(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 3000)
	split := strings.Repeat("y", 1<<20-1) // then "\r" ends the first 1 MiB read, "\n" starts the next
	for _, c := range []struct {
		name, data string
		want       []int64
	}{
		{"a.txt", "short\n" + long + "\r\nok\n" + split + "\r\nlast", []int64{3000, 1<<20 - 1}},
		{"a.jsonl", `{"text": "` + long + "\"}\r\n" + `{"text": "ok"}` + "\n", []int64{int64(3000 + len(`{"text": ""}`))}},
		{"b.txt", "ok\n" + long, []int64{3000}}, // no terminator
	} {
		p := writeFile(t, dir, c.name, []byte(c.data))
		var got []error
		_, err := readFile(t, p, Options{MaxDocBytes: 2000, OnInvalid: func(e *RecordError) error { got = append(got, e); return nil }})
		if err != nil || len(got) != len(c.want) {
			t.Fatalf("%s: %v, reported %v; want %d too large", c.name, err, got, len(c.want))
		}
		for i, e := range got {
			var se *SizeError
			if !errors.As(e, &se) || !errors.Is(e, ErrTooLarge) || se.Length != c.want[i] || se.Limit != 2000 ||
				!strings.Contains(e.Error(), "record exceeds the size limit ("+human.Number(c.want[i])+" bytes, limit 2,000)") {
				t.Errorf("%s: %v (%#v); want a SizeError of %d bytes, limit 2000", c.name, e, se, c.want[i])
			}
		}
	}
}

// TestWrongCompression: a file whose name says gzip or zstd but whose
// first bytes say otherwise is refused as corrupt input, saying what it
// looks like (it was a bare "magic number mismatch" or "invalid header").
func TestWrongCompression(t *testing.T) {
	dir := t.TempDir()
	data := []byte(`{"text": "hello world"}` + "\n")
	gz := compressFor(t, "x.gz", data)
	zs := compressFor(t, "x.zst", data)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"a.jsonl.zst", gz, "a.jsonl.zst:1 (offset 0): not zstd data (it starts like gzip: name it .gz)"},
		{"b.jsonl.gz", zs, "b.jsonl.gz:1 (offset 0): not gzip data (it starts like zstd: name it .zst)"},
		{"c.txt.gz", data, ": not gzip data (it starts like plain text: name it without .gz)"},
		{"d.jsonl.zstd", data, "not zstd data (it starts like plain text: name it without .zst)"},
		{"e.jsonl.gz", []byte("PK\x03\x04\x00\x00"), "not gzip data (it starts with the bytes 50 4b 03 04)"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := readFile(t, p, Options{})
		if !errors.Is(err, ErrCorrupt) || err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrCorrupt ending %q", c.name, err, c.want)
		}
	}
	// Named right, or empty, they read as before.
	for name, b := range map[string][]byte{"ok.jsonl.gz": gz, "ok.jsonl.zst": zs, "empty.jsonl.gz": nil} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		if docs, err := readFile(t, p, Options{}); err != nil || len(docs) != len(b)/max(len(b), 1) {
			t.Errorf("%s: %v, %d documents", name, err, len(docs))
		}
	}
}

// TestExpandBrokenLink: a symbolic link to nothing given as an input is
// named with its target (it was "no such file or directory").
func TestExpandBrokenLink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "x.jsonl")
	if err := os.Symlink(filepath.Join("missing", "y.jsonl"), link); err != nil {
		t.Skip(err)
	}
	_, err := Expand([]string{link})
	want := link + " is a symbolic link to " + filepath.Join("missing", "y.jsonl") + ", which does not exist"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v; want %q (wrapping fs.ErrNotExist)", err, want)
	}
	// Found while walking a directory, it is worded alike, with the
	// flag that leaves it out (it was "x.jsonl: broken symbolic link
	// to missing/y.jsonl: no such file or directory (use --exclude
	// ...)").
	_, err = Expand([]string{dir})
	want += " (use --exclude to leave it out)"
	if err == nil || err.Error() != want || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("walked: got %v; want %q (wrapping fs.ErrNotExist)", err, want)
	}
	// A missing file that is no link keeps the system's error.
	_, err = Expand([]string{filepath.Join(dir, "none.jsonl")})
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v; want the *fs.PathError", err)
	}
}
