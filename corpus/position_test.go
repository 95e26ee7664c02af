package corpus

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/internal/human"
)

// positionLines is a JSONL file with what a Position must get right
// after it: blank lines, CRLF, ids from the line number and, with bad,
// a line too long (MaxDocBytes 120) and bad JSON.
func positionLines(bad bool) []byte {
	var b bytes.Buffer
	for i := range 60 {
		switch {
		case i%7 == 2:
			b.WriteString("\n  \n")
		case i%7 == 4:
			fmt.Fprintf(&b, "{\"text\": \"crlf %d\"}\r\n", i)
		case i%7 == 3 && bad:
			fmt.Fprintf(&b, "{\"text\": \"%s\"}\n", strings.Repeat("long ", 40))
		case i%7 == 5 && bad:
			b.WriteString("{\"text\": not json}\r\n")
		}
		fmt.Fprintf(&b, "{\"text\": \"document %d é\"}\n", i)
	}
	return b.Bytes()
}

// pieces compresses data as members or frames of every n input bytes
// (cut anywhere, not at lines); head is written before the first.
func pieces(t testing.TB, comp string, data []byte, n int, head []byte) []byte {
	t.Helper()
	out := append([]byte(nil), head...)
	for len(data) > 0 {
		c := data[:min(n, len(data))]
		data = data[len(c):]
		var b bytes.Buffer
		switch comp {
		case "gzip":
			w := gzip.NewWriter(&b)
			w.Write(c)
			w.Close()
		case "zstd":
			w, _ := zstd.NewWriter(&b)
			w.Write(c)
			w.Close()
		}
		out = append(out, b.Bytes()...)
	}
	return out
}

// events reads r to its end: each document and bad record as a line,
// with the Position after each document.
func events(t *testing.T, name string, opts Options) ([]string, []Position, []int) {
	t.Helper()
	var ev []string
	opts.OnInvalid = func(e *RecordError) error {
		ev = append(ev, "bad "+e.Error())
		return nil
	}
	r, err := Open(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ps []Position
	var at []int
	for r.Next() {
		d := r.Doc()
		ev = append(ev, fmt.Sprintf("doc %q %q %d %d %q", d.ID, d.Text, d.Record, d.Offset, d.Raw))
		if opts.Start == (Position{}) {
			var p Position
			var ok bool
			switch r := r.(type) {
			case *JSONL:
				p, ok = r.Position()
			case *Lines:
				p, ok = r.Position()
			}
			if ok {
				ps, at = append(ps, p), append(at, len(ev))
			}
		}
	}
	if err := r.Err(); err != nil {
		ev = append(ev, "err "+err.Error())
	}
	return ev, ps, at
}

// TestPosition checks that a reader started at each Position a reader
// of the whole file gave reads what that reader read after it: the same
// documents, line numbers, offsets and bad records (their errors name
// lines and compressed offsets), in plain, multi-member gzip and
// multi-frame zstd files, damaged or not.
func TestPosition(t *testing.T) {
	data, clean := positionLines(true), positionLines(false)
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'}
	full := pieces(t, "zstd", clean, 97, nil)
	cases := []struct {
		name string
		file []byte
		// multi: the file has Positions past its start.
		multi bool
	}{
		{"plain.jsonl", data, true},
		{"plain.txt", data, true},
		{"members.jsonl.gz", pieces(t, "gzip", data, 97, nil), true},
		{"one.jsonl.gz", pieces(t, "gzip", data, len(data), nil), false},
		{"frames.jsonl.zst", pieces(t, "zstd", data, 131, skippable), true},
		{"frames.txt.zst", pieces(t, "zstd", data, 131, nil), true},
		{"one.jsonl.zst", pieces(t, "zstd", data, len(data), nil), false},
		{"sniffed.jsonl", pieces(t, "gzip", data, 200, nil), true},
		{"cut.jsonl.gz", func() []byte { b := pieces(t, "gzip", clean, 300, nil); return b[:len(b)-150] }(), true},
		{"cut.jsonl.zst", full[:len(full)-60], true},
	}
	dir := t.TempDir()
	for _, c := range cases {
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/raw=%v", c.name, raw), func(t *testing.T) {
				name := filepath.Join(dir, c.name)
				if err := os.WriteFile(name, c.file, 0o644); err != nil {
					t.Fatal(err)
				}
				opts := Options{MaxDocBytes: 120, RawOnly: raw}
				want, ps, at := events(t, name, opts)
				if damaged := strings.HasPrefix(c.name, "cut"); damaged != strings.Contains(want[len(want)-1], "truncated") {
					t.Fatalf("last event %q, want a truncated stream: %v", want[len(want)-1], damaged)
				}
				if len(ps) < 20 {
					t.Fatalf("%d positions in %d events", len(ps), len(want))
				}
				past := 0
				for k, p := range ps {
					if p.At > 0 && p.At < int64(len(c.file)) {
						past++
					}
					opts.Start = p
					got, _, _ := events(t, name, opts)
					if w := want[at[k]:]; strings.Join(got, "\n") != strings.Join(w, "\n") {
						t.Fatalf("from %+v (after event %d):\n%s\nwant\n%s", p, at[k], strings.Join(got, "\n"), strings.Join(w, "\n"))
					}
				}
				if c.multi != (past > 0) {
					t.Errorf("%d of %d positions past the file's start, want some: %v", past, len(ps), c.multi)
				}
			})
		}
	}
}

// TestPositionFileChanged: a Position of a local file is refused once the
// file has another size (a line written before it moves every line after),
// naming the file and both sizes, instead of reading from a place that is
// no longer a line's start.
func TestPositionFileChanged(t *testing.T) {
	name := filepath.Join(t.TempDir(), "docs.jsonl")
	data := positionLines(false)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, ps, _ := events(t, name, Options{MaxDocBytes: 120})
	if len(ps) < 2 {
		t.Fatalf("%d positions", len(ps))
	}
	p := ps[len(ps)/2]
	if p.Size != int64(len(data)) {
		t.Fatalf("position size %d, want the file's %d", p.Size, len(data))
	}
	if err := os.WriteFile(name, append([]byte("{\"id\":\"new\",\"text\":\"a line before\"}\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(name, Options{MaxDocBytes: 120, Start: p})
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "changed") ||
		!strings.Contains(err.Error(), human.Number(len(data))) {
		t.Fatalf("open at %+v of a changed file: %v, want an error naming it, its old size and the change", p, err)
	}
}

// FuzzPosition: on any input, plain or compressed in members or frames,
// a reader started at any Position that a reader of the whole file gave
// reads what that reader read after it (documents, lines, offsets, bad
// records, damage), and a reader started at any Position at all, made up,
// returns an error or reads to an end without panicking.
func FuzzPosition(f *testing.F) {
	f.Add(positionLines(true), uint8(0), uint16(3), int64(10), int64(0), int64(2), int64(10))
	f.Add(positionLines(true), uint8(1), uint16(7), int64(0), int64(5), int64(0), int64(5))
	f.Add(positionLines(false), uint8(2), uint16(11), int64(20), int64(3), int64(1), int64(40))
	f.Add(positionLines(false), uint8(3), uint16(5), int64(9), int64(1), int64(1), int64(1))
	f.Add([]byte("{\"text\":\"a\"}\n\xff\n{\"text\":\"b\"}"), uint8(2), uint16(0), int64(-1), int64(0), int64(0), int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, pick uint16, at, skip, line, off int64) {
		names := []string{"f.jsonl", "f.txt", "f.jsonl.gz", "f.jsonl.zst"}
		comps := []string{"", "", "gzip", "zstd"}
		k := int(kind) % len(names)
		file := data
		if comps[k] != "" {
			// At most 16 members or frames: a zstd writer a frame is slow.
			file = pieces(t, comps[k], data, max(64, len(data)/16), nil)
		}
		name := filepath.Join(dir, names[k])
		if err := os.WriteFile(name, file, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := Options{MaxDocBytes: 64}
		want, ps, after := events(t, name, opts)
		if len(ps) > 0 {
			i := int(pick) % len(ps)
			opts.Start = ps[i]
			got, _, _ := events(t, name, opts)
			if w := want[after[i]:]; strings.Join(got, "\n") != strings.Join(w, "\n") {
				t.Fatalf("from %+v (after event %d):\n%s\nwant\n%s", ps[i], after[i], strings.Join(got, "\n"), strings.Join(w, "\n"))
			}
		}
		made := Position{Line: line, Offset: off, At: at, Skip: skip, Compression: comps[k]}
		r, err := Open(name, Options{MaxDocBytes: 64, Start: made, OnInvalid: skipAll})
		if err != nil {
			return
		}
		for n := 0; r.Next(); n++ {
			if n > len(file)+1 {
				t.Fatalf("from %+v: more documents than bytes", made)
			}
		}
		r.Close()
	})
}
