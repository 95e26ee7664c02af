package corpus

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFormatOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    format
		c    compression
		ok   bool
	}{
		{"a.jsonl", formatJSONL, compNone, true},
		{"A.JSON.GZ", formatJSONL, compGzip, true},
		{"x/b.ndjson.zst", formatJSONL, compZstd, true},
		{"c.txt.zstd", formatLines, compZstd, true},
		{"d.warc.gz", formatWARC, compGzip, true},
		{"CC-MAIN-x.warc.wet.gz", formatWARC, compGzip, true},
		{"e.arc", formatWARC, compNone, true},
		{"f.parquet", formatParquet, compNone, true},
		{"-", formatJSONL, compSniff, true},
		{"f.parquet.gz", 0, 0, false},
		{"g.csv", 0, 0, false},
		{"noext", 0, 0, false},
	} {
		f, c, err := formatOf(tc.name)
		if (err == nil) != tc.ok || (tc.ok && (f != tc.f || c != tc.c)) {
			t.Errorf("formatOf(%q) = %v, %v, %v; want %v, %v, ok %v", tc.name, f, c, err, tc.f, tc.c, tc.ok)
		}
		if !tc.ok && !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("formatOf(%q) error %v does not wrap ErrUnknownFormat", tc.name, err)
		}
	}
}

func TestExpandAndMulti(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	writeFile(t, dir, "b.jsonl", []byte(`{"id":"b1","text":"x"}`+"\n"))
	writeFile(t, dir, "a.txt.gz", []byte("a1\na2\n"))
	writeFile(t, filepath.Join(dir, "sub"), "c.jsonl.zst", []byte(`{"id":"c1","text":"y"}`+"\n"))
	writeFile(t, dir, "notes.md", []byte("ignored"))
	single := writeFile(t, t.TempDir(), "z.jsonl", []byte(`{"id":"z1","text":"z"}`+"\n"))
	files, err := Expand([]string{dir, single})
	if err != nil {
		t.Fatal(err)
	}
	var rel []string
	for _, f := range files[:len(files)-1] {
		r, _ := filepath.Rel(dir, f)
		rel = append(rel, r)
	}
	if want := "a.txt.gz b.jsonl sub/c.jsonl.zst"; strings.Join(rel, " ") != want || files[len(files)-1] != single {
		t.Fatalf("Expand = %v, want %s then %s", files, want, single)
	}
	docs, err := readAll(NewMulti(files, Options{}))
	var ids []string
	for _, d := range docs {
		ids = append(ids, filepath.Base(d.ID))
	}
	if err != nil || strings.Join(ids, " ") != "a.txt.gz:1 a.txt.gz:2 b1 c1 z1" {
		t.Errorf("Multi read %v, %v", ids, err)
	}
	if _, err := Expand([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("Expand of a missing path succeeded")
	}
}

func TestStdin(t *testing.T) {
	for _, name := range []string{"plain.jsonl", "gz.jsonl.gz", "zst.jsonl.zst"} {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), name, []byte(jsonlSample))
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			old := os.Stdin
			os.Stdin = f
			defer func() { os.Stdin = old }()
			docs, err := readFile(t, "-", Options{})
			if err != nil || len(docs) != 3 || docs[0].ID != "a" || docs[2].ID != "-:4" {
				t.Errorf("stdin: %v, %v", docs, err)
			}
		})
	}
}
