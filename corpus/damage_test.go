package corpus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// damageDocs is the JSONL of the damage tests: small, so that every byte
// of its compressed forms can be flipped.
func damageDocs(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"id": "d%d", "text": "document %d: the quick brown fox %d jumps over the lazy dog"}`+"\n", i, i, i*7919%1000)
	}
	return b.Bytes()
}

// outcome is what reading a file, skipping bad records, gave.
type outcome struct {
	docs    []doc
	records []*RecordError // every error reported to OnInvalid
	err     error          // from the reader
}

func (o outcome) corrupt() []*StreamError {
	var out []*StreamError
	for _, e := range o.records {
		var se *StreamError
		if errors.As(e, &se) {
			out = append(out, se)
		}
	}
	return out
}

func readSkipping(t *testing.T, path string) outcome {
	t.Helper()
	var o outcome
	r, err := Open(path, Options{MaxDocBytes: 1 << 12, OnInvalid: func(e *RecordError) error {
		o.records = append(o.records, e)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	o.docs, o.err = readAll(r)
	return o
}

// lost counts the documents of want missing from got (a changed document
// is missing). Texts are compared: ids may name the file.
func lost(want, got []doc) int {
	n := 0
	for _, d := range want {
		if !slices.ContainsFunc(got, func(g doc) bool { return g.Text == d.Text }) {
			n++
		}
	}
	return n
}

// TestBitFlips flips one bit at every byte offset of a small gzip and zstd
// file. Each flip either changes nothing that is read (bits no decoder
// uses) or is reported as damage to the stream, with
// the offset where reading stopped, and never as a bad record: garbage
// that decodes as text before the checksum fails is not blamed on the
// JSON.
func TestBitFlips(t *testing.T) {
	data := damageDocs(40)
	dir := t.TempDir()
	for _, name := range []string{"f.jsonl.gz", "f.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			clean := compressFor(t, name, data)
			path := filepath.Join(dir, name)
			os.WriteFile(path, clean, 0o644)
			want, err := readFile(t, path, Options{})
			if err != nil || len(want) != 40 {
				t.Fatalf("clean file: %d docs, %v", len(want), err)
			}
			silent := 0
			for off := range clean {
				b := slices.Clone(clean)
				b[off] ^= 1 << (off % 8)
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				o := readSkipping(t, path)
				if o.err != nil {
					t.Fatalf("offset %d: reader error %v with OnInvalid skipping", off, o.err)
				}
				se := o.corrupt()
				if len(se) == 0 {
					// Bits no decoder reads (the gzip header's MTIME, XFL
					// and OS, padding after the last block, unused zstd
					// header and table bits) change nothing.
					if len(o.records) > 0 || !slices.Equal(o.docs, want) {
						t.Fatalf("offset %d: %d docs, %d lost, errors %v: damage not reported as such", off, len(o.docs), lost(want, o.docs), o.records)
					}
					silent++
					t.Logf("flip at offset %d of %d: nothing changed", off, len(b))
					continue
				}
				if len(o.records) != 1 {
					t.Errorf("offset %d: %d errors %v, want the stream error alone", off, len(o.records), o.records)
				}
				if se[0].Offset < 0 || se[0].Offset > int64(len(b)) || se[0].Size != int64(len(b)) {
					t.Errorf("offset %d: stream error %+v: offset outside the file of %d bytes", off, se[0], len(b))
				}
				if !strings.Contains(o.records[0].Error(), path) {
					t.Errorf("offset %d: %v does not name the file", off, o.records[0])
				}
				// Without OnInvalid, the reader stops with the same error.
				r, _ := Open(path, Options{MaxDocBytes: 1 << 12})
				_, err := readAll(r)
				var se2 *StreamError
				if !errors.As(err, &se2) {
					t.Errorf("offset %d: without skipping, err = %v, want a *StreamError", off, err)
				}
			}
			t.Logf("%d of %d flips changed nothing", silent, len(clean))
		})
	}
}

// TestDamageMatrix damages every reader's input in the ways files get
// damaged and checks that nothing is lost silently: damage to a stream is
// reported as ErrCorrupt (a *StreamError with its offset where there is a
// compressed stream) and a lost record as a bad record, and the documents
// missing from what was read never outnumber the errors reported, unless
// the stream's damage was reported (then how much was lost is unknown).
func TestDamageMatrix(t *testing.T) {
	jsonl := damageDocs(30)
	var txt bytes.Buffer
	for i := range 30 {
		fmt.Fprintf(&txt, "line %d of the text file\n", i)
	}
	var warcRecs, arcRecs []string
	for i := range 10 {
		warcRecs = append(warcRecs, response(fmt.Sprintf("http://h/%d", i), "Content-Type: text/plain\r\n", fmt.Sprintf("page %d says hello", i)))
		arcRecs = append(arcRecs, arcRecord(fmt.Sprintf("http://a/%d", i), "text/plain", fmt.Sprintf("arc page %d", i)))
	}
	warc := strings.Join(warcRecs, "")
	request := warcRecord("WARC/1.0", []string{"WARC-Type: request", "WARC-Target-URI: http://h/req"}, "GET / HTTP/1.1\r\n\r\n", false)
	withRequest := strings.Join(warcRecs[:3], "") + request + strings.Join(warcRecs[3:], "")
	// The request record's Content-Length gets a digit in front.
	requestLength := func(b []byte) []byte {
		i := bytes.Index(b, []byte("http://h/req"))
		j := i + bytes.Index(b[i:], []byte("Content-Length: "))
		return slices.Concat(b[:j+16], []byte("3"), b[j+16:])
	}
	arc := arcFiledesc + strings.Join(arcRecs, "")
	dir := t.TempDir()
	pq := filepath.Join(dir, "clean.parquet")
	{
		w, err := Create(pq)
		if err != nil {
			t.Fatal(err)
		}
		r := NewJSONL(nopCloser(string(jsonl)), "x", Options{})
		for r.Next() {
			if err := w.Write(r.Doc()); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	parquet, _ := os.ReadFile(pq)

	truncate := func(b []byte) []byte { return b[:len(b)*2/3] }
	flipMiddle := func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b }
	flipAt := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x80; return b }
	}
	gzTrailer := func(b []byte) []byte { b[len(b)-6] ^= 1; return b } // the CRC-32
	gzSize := func(b []byte) []byte { b[len(b)-1] ^= 1; return b }    // ISIZE
	zstChecksum := func(b []byte) []byte { b[len(b)-1] ^= 1; return b }
	// The second WARC record's Content-Length gets a digit in front: its
	// block runs into the next records, or past the end of the file.
	warcLength := func(digit string) func([]byte) []byte {
		return func(b []byte) []byte {
			i := bytes.Index(b, []byte("http://h/1"))
			j := i + bytes.Index(b[i:], []byte("Content-Length: "))
			return slices.Concat(b[:j+16], []byte(digit), b[j+16:])
		}
	}
	arcLength := func(b []byte) []byte {
		i := bytes.Index(b, []byte("http://a/1 "))
		j := i + bytes.IndexByte(b[i:], '\n')
		return slices.Concat(b[:j], []byte("0"), b[j:]) // 10 times the length
	}
	pqFooterLength := func(b []byte) []byte {
		n := binary.LittleEndian.Uint32(b[len(b)-8:])
		binary.LittleEndian.PutUint32(b[len(b)-8:], n+7)
		return b
	}
	// gzip with one member per record, as web archives are written.
	members := []byte(gzipMembers(warcRecs...))

	type kind int
	const (
		stream kind = iota // ErrCorrupt must be reported
		record             // a bad record is reported (or nothing is lost)
		// prefix: a plain file cut short. Nothing records its length, so
		// what was read is a prefix of the documents, and only a cut
		// JSONL record is seen (a cut text line is a shorter line).
		prefix
	)
	for _, tc := range []struct {
		name   string // file name; its suffix compresses
		data   []byte
		damage func([]byte) []byte
		want   kind
		asIs   bool // data is written as it is, not compressed by the name
	}{
		{"truncated.jsonl", jsonl, truncate, prefix, false},
		{"flip.jsonl", jsonl, flipAt(100), record, false},
		{"truncated.jsonl.gz", jsonl, truncate, stream, false},
		{"flip.jsonl.gz", jsonl, flipMiddle, stream, false},
		{"crc.jsonl.gz", jsonl, gzTrailer, stream, false},
		{"isize.jsonl.gz", jsonl, gzSize, stream, false},
		{"truncated.jsonl.zst", jsonl, truncate, stream, false},
		{"flip.jsonl.zst", jsonl, flipMiddle, stream, false},
		{"checksum.jsonl.zst", jsonl, zstChecksum, stream, false},
		{"truncated.txt", txt.Bytes(), truncate, prefix, false},
		{"flip.txt", txt.Bytes(), flipAt(40), record, false},
		{"truncated.txt.gz", txt.Bytes(), truncate, stream, false},
		{"crc.txt.gz", txt.Bytes(), gzTrailer, stream, false},
		{"truncated.txt.zst", txt.Bytes(), truncate, stream, false},
		{"truncated.parquet", parquet, truncate, stream, false},
		{"flip.parquet", parquet, flipMiddle, record, false},
		{"length.parquet", parquet, pqFooterLength, stream, false},
		{"truncated.warc", []byte(warc), truncate, stream, false},
		{"length.warc", []byte(warc), warcLength("1"), record, false},
		{"length-eof.warc", []byte(warc), warcLength("9"), record, false},
		{"length-request.warc", []byte(withRequest), requestLength, record, false},
		{"flip.warc", []byte(warc), flipMiddle, record, false},
		{"truncated.warc.gz", []byte(warc), truncate, stream, false},
		{"crc.warc.gz", []byte(warc), gzTrailer, stream, false},
		{"truncated-members.warc.gz", members, truncate, stream, true},
		{"flip-members.warc.gz", members, flipMiddle, stream, true},
		{"crc-members.warc.gz", members, gzTrailer, stream, true},
		{"truncated.arc", []byte(arc), truncate, stream, false},
		{"length.arc", []byte(arc), arcLength, record, false},
		{"truncated.arc.gz", []byte(arc), truncate, stream, false},
		{"crc.arc.gz", []byte(arc), gzTrailer, stream, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanPath := filepath.Join(dir, "clean-"+tc.name)
			if tc.asIs || strings.HasSuffix(tc.name, ".parquet") {
				os.WriteFile(cleanPath, tc.data, 0o644)
			} else {
				writeFile(t, dir, "clean-"+tc.name, tc.data)
			}
			want, err := readFile(t, cleanPath, Options{MaxDocBytes: 1 << 12})
			if err != nil || len(want) < 10 {
				t.Fatalf("clean file: %d docs, %v", len(want), err)
			}
			clean, _ := os.ReadFile(cleanPath)
			path := filepath.Join(dir, tc.name)
			os.WriteFile(path, tc.damage(slices.Clone(clean)), 0o644)
			o := readSkipping(t, path)
			if o.err != nil {
				t.Fatalf("reader error %v with OnInvalid skipping", o.err)
			}
			var corrupt []*RecordError
			for _, e := range o.records {
				if !strings.Contains(e.Error(), path) {
					t.Errorf("%v does not name the file", e)
				}
				if errors.Is(e, ErrCorrupt) {
					corrupt = append(corrupt, e)
				}
			}
			n := lost(want, o.docs)
			// A wrong Content-Length costs its own record and no other.
			maxLost := map[string]int{"length.warc": 1, "length-eof.warc": 1, "length-request.warc": 0, "length.arc": 1}
			if m, ok := maxLost[tc.name]; ok && n > m {
				t.Errorf("%d docs lost, want at most %d", n, m)
			}
			t.Logf("%d of %d docs lost; reported %v", n, len(want), o.records)
			switch tc.want {
			case stream:
				if len(corrupt) == 0 {
					t.Fatalf("%d docs lost, reported %v: want ErrCorrupt", n, o.records)
				}
				var se *StreamError
				if compressed(tc.name) && !errors.As(corrupt[0], &se) {
					t.Errorf("%v: want a *StreamError", corrupt[0])
				}
			case prefix:
				k := len(o.docs)
				if strings.HasSuffix(tc.name, ".txt") {
					k-- // the cut line
				}
				if k < 1 || !slices.Equal(texts(o.docs[:k]), texts(want[:k])) {
					t.Errorf("read %d docs, not a prefix of the %d of the file", len(o.docs), len(want))
				}
				if strings.HasSuffix(tc.name, ".jsonl") && len(o.records) != 1 {
					t.Errorf("reported %v, want the cut record", o.records)
				}
			case record:
				if len(corrupt) == 0 && n > len(o.records) {
					t.Errorf("%d docs lost but %d bad records reported: %v", n, len(o.records), o.records)
				}
			}
		})
	}
}

func texts(docs []doc) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.Text)
	}
	return out
}

func compressed(name string) bool {
	_, c := splitCompression(name)
	return c != compNone
}

// failingReader returns data, then a read error of the file itself.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func (f *failingReader) Close() error { return nil }

// TestReadErrorNotSkipped: an I/O error is no bad record: skipping bad
// records does not hide it, for plain and compressed input.
func TestReadErrorNotSkipped(t *testing.T) {
	disk := errors.New("input/output error")
	data := damageDocs(20)
	for _, name := range []string{"f.jsonl", "f.jsonl.gz", "f.txt", "f.txt.zst"} {
		half := compressFor(t, name, data)
		half = half[:len(half)/2]
		_, comp := splitCompression(name)
		src := newDecoder(&failingReader{data: half, err: disk}, comp)
		var r Reader = NewJSONL(src, name, Options{OnInvalid: skipAll})
		if strings.HasPrefix(filepath.Ext(strings.TrimSuffix(name, ".zst")), ".txt") {
			r = NewLines(src, name, Options{OnInvalid: skipAll})
		}
		if _, err := readAll(r); !errors.Is(err, disk) {
			t.Errorf("%s: err = %v, want the read error", name, err)
		}
	}
}
