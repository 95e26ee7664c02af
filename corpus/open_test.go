package corpus

import (
	"errors"
	"fmt"
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
		f, c, err := formatOf(tc.name, "")
		if (err == nil) != tc.ok || (tc.ok && (f != tc.f || c != tc.c)) {
			t.Errorf("formatOf(%q) = %v, %v, %v; want %v, %v, ok %v", tc.name, f, c, err, tc.f, tc.c, tc.ok)
		}
		if !tc.ok && !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("formatOf(%q) error %v does not wrap ErrUnknownFormat", tc.name, err)
		}
	}
}

// TestOpenStreamFormat: a file whose name gives no format is read in
// Options.StreamFormat; a name that gives one keeps it, and without
// StreamFormat the name is refused as before.
func TestOpenStreamFormat(t *testing.T) {
	dir := t.TempDir()
	jsonl := []byte(`{"id":"a","text":"one two"}` + "\n")
	for _, tc := range []struct {
		name, stream string
		data         []byte
		ids          string // "" for ErrUnknownFormat
	}{
		{"data.zst", "jsonl", jsonl, "a"}, // compressed by writeFile
		{"corpus.data", "jsonl", jsonl, "a"},
		{"corpus.data", "txt", jsonl, "corpus.data:1"},
		{"lines", "txt", []byte("x y\nz\n"), "lines:1 lines:2"},
		{"corpus.data", "", jsonl, ""},
		{"known.txt", "jsonl", []byte("x y\n"), "known.txt:1"}, // its name's format
		{"t.parquet.gz", "jsonl", jsonl, ""},                   // a name's refusal stays
	} {
		name := writeFile(t, dir, tc.name, tc.data)
		opts := Options{StreamFormat: tc.stream}
		if err := CheckFormatWith(name, opts); (err == nil) != (tc.ids != "") {
			t.Errorf("CheckFormatWith(%s, %q) = %v", tc.name, tc.stream, err)
		}
		rd, err := Open(name, opts)
		if tc.ids == "" {
			if !errors.Is(err, ErrUnknownFormat) {
				t.Errorf("Open(%s, %q): %v, want ErrUnknownFormat", tc.name, tc.stream, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Open(%s, %q): %v", tc.name, tc.stream, err)
		}
		var ids []string
		for rd.Next() {
			ids = append(ids, strings.TrimPrefix(rd.Doc().ID, dir+string(filepath.Separator)))
		}
		if err := errors.Join(rd.Err(), rd.Close()); err != nil || strings.Join(ids, " ") != tc.ids {
			t.Errorf("Open(%s, %q): ids %q, %v; want %q", tc.name, tc.stream, ids, err, tc.ids)
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

// TestExpandSymlinks: links to files and directories are followed, a loop
// is walked once, a file reached twice is listed once, unsupported files
// are listed as skipped, --exclude patterns match the relative path or
// the base name, and a broken link is an error naming it unless no reader
// would take its name.
func TestExpandSymlinks(t *testing.T) {
	store := t.TempDir() // where the links point, as in the Hugging Face cache
	writeFile(t, store, "blob1", []byte(`{"id":"1","text":"one"}`+"\n"))
	writeFile(t, store, "blob2", []byte("two\n"))
	os.MkdirAll(filepath.Join(store, "deep"), 0o755)
	writeFile(t, filepath.Join(store, "deep"), "d.jsonl", []byte(`{"id":"d","text":"deep"}`+"\n"))

	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(store, "blob1"), filepath.Join(dir, "a.jsonl")))
	must(os.Symlink(filepath.Join(store, "blob2"), filepath.Join(dir, "b.txt")))
	must(os.Symlink(filepath.Join(store, "blob1"), filepath.Join(dir, "c.jsonl"))) // same file as a.jsonl
	must(os.Symlink(filepath.Join(store, "deep"), filepath.Join(dir, "linked")))
	must(os.Symlink(dir, filepath.Join(dir, "loop")))                        // points to its own directory
	must(os.Symlink("gone.lock", filepath.Join(dir, "x.lock")))              // broken, unsupported name
	writeFile(t, dir, "real.jsonl", []byte(`{"id":"r","text":"real"}`+"\n")) // a plain file among links
	writeFile(t, dir, "README.md", []byte("not a document"))
	writeFile(t, dir, "meta.info.jsonl", []byte(`{"not":"a document"}`+"\n"))

	e, err := ExpandWith([]string{dir}, ExpandOptions{Exclude: []string{"*.info.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string { r, _ := filepath.Rel(dir, p); return r }
	var files []string
	for _, f := range e.Files {
		files = append(files, rel(f))
	}
	if got, want := strings.Join(files, " "), "a.jsonl b.txt linked/d.jsonl real.jsonl"; got != want {
		t.Errorf("files %q, want %q", got, want)
	}
	var skipped []string
	for _, s := range e.Skipped {
		skipped = append(skipped, rel(s.Path)+"="+strings.Fields(s.Reason)[0])
	}
	if got, want := strings.Join(skipped, " "), "README.md=unsupported c.jsonl=same loop=directory x.lock=unsupported"; got != want {
		t.Errorf("skipped %q, want %q", got, want)
	}
	if e.Excluded != 1 {
		t.Errorf("excluded %d, want 1", e.Excluded)
	}
	docs, err := readAll(NewMulti(e.Files, Options{}))
	if err != nil || len(docs) != 4 {
		t.Errorf("read %v, %v; want 4 documents", docs, err)
	}

	// Relative patterns; a directory pattern leaves out its subtree.
	e, err = ExpandWith([]string{dir}, ExpandOptions{Exclude: []string{"linked", "b.*", "meta.info.jsonl"}})
	if err != nil || len(e.Files) != 2 || e.Excluded != 3 {
		t.Errorf("exclude: %+v, %v; want a.jsonl and real.jsonl, 3 excluded", e, err)
	}

	// A broken link a reader would take is an error naming it.
	must(os.Symlink(filepath.Join(store, "gone"), filepath.Join(dir, "z.jsonl")))
	if _, err := ExpandWith([]string{dir}, ExpandOptions{}); err == nil || !strings.Contains(err.Error(), "z.jsonl") || !strings.Contains(err.Error(), "which does not exist") {
		t.Errorf("broken link: err = %v, want one naming z.jsonl", err)
	}
	if _, err := ExpandWith([]string{dir}, ExpandOptions{Exclude: []string{"z.jsonl"}}); err != nil {
		t.Errorf("excluded broken link: %v", err)
	}
	if _, err := ExpandWith([]string{dir}, ExpandOptions{Exclude: []string{"[x"}}); err == nil {
		t.Error("a bad pattern was accepted")
	}

	// A directory of links only (the Hugging Face cache's snapshots).
	only, blobs := t.TempDir(), t.TempDir()
	for i := range 40 {
		blob := writeFile(t, blobs, fmt.Sprintf("%040x", i), []byte(fmt.Sprintf("line %d\n", i)))
		must(os.Symlink(blob, filepath.Join(only, fmt.Sprintf("f%02d.txt", i))))
	}
	e, err = ExpandWith([]string{only}, ExpandOptions{})
	if err != nil || len(e.Files) != 40 || len(e.Skipped) != 0 {
		t.Errorf("40 links: %d files, %d skipped, %v", len(e.Files), len(e.Skipped), err)
	}
}
