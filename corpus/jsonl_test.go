package corpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const jsonlSample = `{"id": "a", "text": "first doc", "lang": "en"}
{"id": 7, "text": "second\ndoc"}

{"text": "no id"}
`

func TestJSONLCompressions(t *testing.T) {
	dir := t.TempDir()
	want := []doc{
		{ID: "a", Text: "first doc", Raw: `{"id": "a", "text": "first doc", "lang": "en"}`, Record: 1},
		{ID: "7", Text: "second\ndoc", Raw: `{"id": 7, "text": "second\ndoc"}`, Record: 2},
		{Text: "no id", Raw: `{"text": "no id"}`, Record: 4},
	}
	for _, name := range []string{"a.jsonl", "a.json", "a.ndjson", "a.jsonl.gz", "a.JSONL.GZ", "a.jsonl.zst", "a.ndjson.zstd"} {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, dir, name, []byte(jsonlSample))
			got, err := readFile(t, p, Options{})
			if err != nil {
				t.Fatalf("read %s: %v", name, err)
			}
			want[2].ID = p + ":4"
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("read %s:\n got %v\nwant %v", name, got, want)
			}
		})
	}
}

func TestJSONLInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       error
	}{
		{"syntax", `{"id": "x", "text": `, ErrSyntax},
		{"array", `["text"]`, ErrNotObject},
		{"null", `null`, ErrNotObject},
		{"missing", `{"id": "x"}`, ErrMissingText},
		{"number-text", `{"text": 3}`, ErrTextType},
		{"utf8", "{\"text\": \"\xff\"}", ErrInvalidUTF8},
		{"too-large", `{"text": "` + strings.Repeat("x", 200) + `"}`, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := `{"id": "ok1", "text": "a"}` + "\n" + tc.line + "\n" + `{"id": "ok2", "text": "b"}` + "\n"
			opts := Options{MaxDocBytes: 100}
			// Without OnInvalid: the bad record stops the reader.
			got, err := readAll(NewJSONL(nopCloser(in), "in.jsonl", opts))
			var re *RecordError
			if !errors.As(err, &re) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want a RecordError wrapping %v", err, tc.want)
			}
			if re.File != "in.jsonl" || re.Record != 2 || re.Offset != int64(len(`{"id": "ok1", "text": "a"}`)+1) {
				t.Errorf("RecordError = %+v, want in.jsonl record 2 offset %d", re, len(`{"id": "ok1", "text": "a"}`)+1)
			}
			if len(got) != 1 || got[0].ID != "ok1" {
				t.Errorf("before the error got %v, want ok1", got)
			}
			// With OnInvalid skipping: both good records.
			var seen []error
			opts.OnInvalid = func(e *RecordError) error { seen = append(seen, e); return nil }
			got, err = readAll(NewJSONL(nopCloser(in), "in.jsonl", opts))
			if err != nil || len(got) != 2 || got[1].ID != "ok2" || len(seen) != 1 {
				t.Errorf("skipping: got %v, %v (reported %v), want ok1 and ok2 and one report", got, err, seen)
			}
		})
	}
}

func TestJSONLOptions(t *testing.T) {
	in := `{"url": "u1", "body": "hello", "text": 5}` + "\n"
	got, err := readAll(NewJSONL(nopCloser(in), "x", Options{TextField: "body", IDField: "url"}))
	if err != nil || len(got) != 1 || got[0].ID != "u1" || got[0].Text != "hello" {
		t.Errorf("got %v, %v; want id u1 text hello", got, err)
	}
}

func TestCorruptCompressed(t *testing.T) {
	dir := t.TempDir()
	var sb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&sb, `{"id": "d%d", "text": "document number %d with some words"}`+"\n", i, i)
	}
	for _, tc := range []struct {
		name   string
		mangle func([]byte) []byte
		intact int // how many documents must be intact
	}{
		{"x.jsonl.gz", func(b []byte) []byte { return b[:len(b)/2] }, 5000},
		{"x.jsonl.zst", func(b []byte) []byte { return b[:len(b)/2] }, 5000},
		{"y.jsonl.gz", func(b []byte) []byte { b[len(b)/2] ^= 0xff; b[len(b)/2+1] ^= 0x55; return b }, 0},
		{"y.jsonl.zst", func(b []byte) []byte { b[len(b)/2] ^= 0xff; b[len(b)/2+1] ^= 0x55; return b }, 0},
		{"z.jsonl.gz", func(b []byte) []byte { return []byte("not gzip at all") }, 0},
		{"z.jsonl.zst", func(b []byte) []byte { return []byte("not zstd at all") }, 0},
		{"t.txt.gz", func(b []byte) []byte { return b[:len(b)-5] }, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			os.WriteFile(p, tc.mangle(compressFor(t, tc.name, []byte(sb.String()))), 0o644)
			got, err := readFile(t, p, Options{})
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Fatalf("err = %v, want an error naming %s", err, p)
			}
			// Truncation leaves what was read intact and in order (a bit
			// flip in gzip is only caught by the CRC at the end of the
			// member, after garbage was decoded).
			for i, d := range got[:min(len(got), tc.intact)] {
				if want := fmt.Sprintf("document number %d with", i); !strings.Contains(d.Text, want) {
					t.Fatalf("doc %d = %v, want text with %q", i, d, want)
				}
			}
			// Skipping: the reader reports ErrCorrupt and stops cleanly,
			// having read at least as much.
			var corrupt error
			got2, err := readFile(t, p, Options{OnInvalid: func(e *RecordError) error {
				if errors.Is(e, ErrCorrupt) {
					corrupt = e
				}
				return nil
			}})
			if err != nil || len(got2) < len(got) {
				t.Errorf("skipping: %d docs, err %v; want >= %d docs and no error", len(got2), err, len(got))
			}
			if corrupt == nil || !strings.Contains(corrupt.Error(), p) {
				t.Errorf("skipping: reported %v, want ErrCorrupt naming %s", corrupt, p)
			}
		})
	}
}

func TestScanObjectDepth(t *testing.T) {
	deep := strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth)
	if _, _, _, err := scanObject([]byte(deep), "id", "text"); err != nil {
		t.Errorf("%d levels: %v, want accepted", maxJSONDepth, err)
	}
	deeper := "{\"a\":" + deep + "}"
	if _, _, _, err := scanObject([]byte(deeper), "id", "text"); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("%d levels: err %v, want the depth limit", maxJSONDepth+1, err)
	}
}

func TestField(t *testing.T) {
	tests := []struct {
		raw, name, want string
		ok              bool
	}{
		{`{"url":"http://x/\u0041","n":3}`, "url", "http://x/A", true},
		{`{"url":"a","n":3}`, "n", "3", true},
		{`{"n":{"a":[1]}}`, "n", `{"a":[1]}`, true},
		{`{"url":"a"}`, "missing", "", false},
		{`[1,2]`, "url", "", false},
		{`{"url":`, "url", "", false},
	}
	for _, tt := range tests {
		got, err := Field([]byte(tt.raw), tt.name)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Field(%s, %q) = %q, %v; want %q, ok=%v", tt.raw, tt.name, got, err, tt.want, tt.ok)
		}
	}
}

// TestJSONLInvalidUTF8Names: a record that is not valid UTF-8 is named by
// its id, and the first bad byte by its place in the line, by the reader
// and by ParseJSONL and ParseJSONLShared (the error said only "invalid
// UTF-8", without the id that the other bad records name).
func TestJSONLInvalidUTF8Names(t *testing.T) {
	line := "{\"id\": \"u1\", \"text\": \"a\xffb\"}"
	_, err := readAll(NewJSONL(nopCloser(line+"\n"), "in.jsonl", Options{}))
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrInvalidUTF8) || re.ID != "u1" || !strings.Contains(err.Error(), "byte 0xff at byte 24 of the line") {
		t.Errorf("reader: %v (%+v), want ErrInvalidUTF8 naming id u1 and byte 24", err, re)
	}
	for name, parse := range map[string]func(*Document, Options) error{"ParseJSONL": ParseJSONL, "ParseJSONLShared": ParseJSONLShared} {
		d := Document{Raw: []byte(line), Source: "in.jsonl", Record: 1}
		if err := parse(&d, Options{}); !errors.Is(err, ErrInvalidUTF8) || d.ID != "u1" {
			t.Errorf("%s: %v, id %q, want ErrInvalidUTF8 and id u1", name, err, d.ID)
		}
	}
	// Without an id, none is made up (the file and line name the record).
	_, err = readAll(NewJSONL(nopCloser("{\"text\": \"\xff\"}\n"), "in.jsonl", Options{}))
	if !errors.As(err, &re) || re.ID != "" {
		t.Errorf("no id: %v (%+v), want no id", err, re)
	}
}
