package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// jsonEqual reports whether two JSON texts hold equal values.
func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

const mixedJSONL = `{"id": "a", "text": "first", "n": 1, "f": 1.5, "ok": true, "tags": ["x", "y"], "meta": {"k": 1}, "mixed": 1}
{"id": "b", "text": "second <b>&</b>", "n": 9007199254740993, "f": 2, "ok": false, "mixed": "s", "only_b": null}
{"id": "c", "text": "日本語", "f": -1e-300, "extra": "new field late"}
`

func TestParquetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte(mixedJSONL))
	want, err := readFile(t, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pq := filepath.Join(dir, "out.parquet")
	copyAll(t, src, pq)
	got, err := readFile(t, pq, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read back %d documents, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Text != want[i].Text || !jsonEqual(got[i].Raw, want[i].Raw) || got[i].Record != int64(i+1) {
			t.Errorf("document %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	// And back to JSONL: the same records again.
	back := filepath.Join(dir, "back.jsonl")
	copyAll(t, pq, back)
	got2, err := readFile(t, back, Options{})
	if err != nil || len(got2) != len(want) {
		t.Fatalf("JSONL from Parquet: %d docs, %v", len(got2), err)
	}
	for i := range want {
		if !jsonEqual(got2[i].Raw, want[i].Raw) {
			t.Errorf("JSONL from Parquet, record %d: %s, want %s", i, got2[i].Raw, want[i].Raw)
		}
	}
	// The schema follows the documented rules.
	f, _ := os.Open(pq)
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	types := map[string]string{}
	for _, fl := range pf.Schema().Fields() {
		types[fl.Name()] = fmt.Sprint(fl.Type())
	}
	wantTypes := map[string]string{"id": "STRING", "text": "STRING", "n": "INT(64,true)", "f": "DOUBLE", "ok": "BOOLEAN",
		"tags": "JSON", "meta": "JSON", "mixed": "JSON", "only_b": "JSON", "extra": "STRING"}
	if !reflect.DeepEqual(types, wantTypes) {
		t.Errorf("schema %v, want %v", types, wantTypes)
	}
}

func TestParquetEmptyAndNoRaw(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "empty.parquet")
	w, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, err := readFile(t, p, Options{}); err != nil || len(got) != 0 {
		t.Errorf("empty file: %v, %v", got, err)
	}
	w, _ = Create(p)
	w.Write(&Document{ID: "x", Text: "built by hand"})
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := readFile(t, p, Options{})
	if err != nil || len(got) != 1 || got[0].ID != "x" || got[0].Text != "built by hand" {
		t.Errorf("got %v, %v", got, err)
	}
}

func TestParquetAbort(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "a.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&Document{ID: "x", Text: "t"})
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("after Abort the directory holds %d entries", len(es))
	}
}

// A file written by parquet-go from Go structs, with nested fields, typed
// columns and a non-default text column.
type pqNested struct {
	URL   string            `parquet:"url"`
	Body  string            `parquet:"body"`
	Tags  []string          `parquet:"tags,list"`
	Attrs map[string]string `parquet:"attrs"`
	N     int32             `parquet:"n"`
}

type pqFlat struct {
	Key   int64    `parquet:"key"`
	Body  *string  `parquet:"body,optional"`
	Score float32  `parquet:"score"`
	Day   int32    `parquet:"day,date"`
	Blob  []byte   `parquet:"blob"`
	Opt   *float64 `parquet:"opt,optional"`
}

func writeStructs[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	var b bytes.Buffer
	w := parquet.NewGenericWriter[T](&b)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, b.Bytes(), 0o644)
}

func TestParquetForeignFiles(t *testing.T) {
	dir := t.TempDir()
	nested := filepath.Join(dir, "nested.parquet")
	writeStructs(t, nested, []pqNested{{URL: "u1", Body: "hello", Tags: []string{"a", "b"}, Attrs: map[string]string{"k": "v"}, N: 3}})
	got, err := readFile(t, nested, Options{TextField: "body", IDField: "url"})
	wantRaw := `{"attrs":{"k":"v"},"body":"hello","n":3,"tags":["a","b"],"url":"u1"}`
	if err != nil || len(got) != 1 || got[0].ID != "u1" || got[0].Text != "hello" || !jsonEqual(got[0].Raw, wantRaw) {
		t.Errorf("nested: got %v, %v; want Raw %s", got, err, wantRaw)
	}

	flat := filepath.Join(dir, "flat.parquet")
	s := "text"
	writeStructs(t, flat, []pqFlat{{Key: 42, Body: &s, Score: 0.5, Day: 19000, Blob: []byte{'o', 'k', 0xff}}, {Key: 43}})
	var reported []error
	got, err = readFile(t, flat, Options{TextField: "body", IDField: "key", OnInvalid: func(e *RecordError) error { reported = append(reported, e); return nil }})
	wantRaw = `{"key":42,"body":"text","score":0.5,"day":"2022-01-08","blob":"ok\ufffd"}`
	if err != nil || len(got) != 1 || got[0].ID != "42" || got[0].Raw != wantRaw {
		t.Errorf("flat: got %v, %v; want Raw %s", got, err, wantRaw)
	}
	if len(reported) != 1 || !errors.Is(reported[0], ErrMissingText) || reported[0].(*RecordError).Record != 2 {
		t.Errorf("flat: reported %v, want ErrMissingText for row 2", reported)
	}

	// No text column: one error for the file.
	_, err = readFile(t, flat, Options{})
	if !errors.Is(err, ErrMissingText) || !strings.Contains(err.Error(), flat) {
		t.Errorf("no text column: err = %v, want ErrMissingText naming the file", err)
	}
	// The columns are named as a JSONL record's fields are, not as Go
	// prints the schema's column paths ([[body] [key]]).
	if err == nil || !strings.Contains(err.Error(), `(the file's columns: `) || !strings.Contains(err.Error(), `"body"`) || strings.Contains(err.Error(), "[") {
		t.Errorf("no text column: err = %v, want the file's columns quoted", err)
	}
}

func TestParquetCorrupt(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "in.jsonl", []byte(strings.Repeat(mixedJSONL, 50)))
	good := filepath.Join(dir, "good.parquet")
	copyAll(t, src, good)
	data, _ := os.ReadFile(good)
	cases := map[string][]byte{
		"empty":     {},
		"garbage":   []byte("this is not a parquet file at all, not even close"),
		"truncated": data[:len(data)/2],
		"no-footer": data[:len(data)-8],
	}
	for i := 4; i < len(data)-8; i += max(1, len(data)/40) {
		b := bytes.Clone(data)
		b[i] ^= 0xa5
		cases[fmt.Sprintf("flip-%d", i)] = b
	}
	for name, b := range cases {
		p := filepath.Join(dir, name+".parquet")
		os.WriteFile(p, b, 0o644)
		got, err := readFile(t, p, Options{}) // must not panic
		if err != nil && !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v does not name the file", name, err)
		}
		if strings.HasPrefix(name, "flip") {
			continue // a flipped byte in a value may go unnoticed
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: read %d docs, err %v; want ErrCorrupt", name, len(got), err)
		}
		if _, err := readFile(t, p, Options{OnInvalid: func(*RecordError) error { return nil }}); err != nil {
			t.Errorf("%s: skipping: err %v, want a clean stop", name, err)
		}
	}
}
