package simhash

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleIDF() *IDF {
	var b IDFBuilder
	b.AddDoc([]uint64{1, 2, 3, 1})
	b.AddDoc([]uint64{1, 0xffffffffffffffff})
	b.AddDoc([]uint64{2, 1 << 40})
	return b.IDF("unit=word n=1 seed=0")
}

func TestIDFRoundTrip(t *testing.T) {
	idf := sampleIDF()
	var buf bytes.Buffer
	if _, err := idf.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	want := "neardup-idf 1\ndocs 3\nmeta unit=word n=1 seed=0\n" +
		"0000000000000001 2\n0000000000000002 2\n0000000000000003 1\n" +
		"0000010000000000 1\nffffffffffffffff 1\n"
	if buf.String() != want {
		t.Fatalf("WriteTo wrote\n%s\nwant\n%s", buf.String(), want)
	}
	got, err := ReadIDF(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got.Docs != 3 || got.Meta != idf.Meta || got.Len() != 5 || got.DF(1) != 2 || got.Weight(3) != idf.Weight(3) {
		t.Errorf("read back docs=%d meta=%q len=%d df(1)=%d", got.Docs, got.Meta, got.Len(), got.DF(1))
	}
	path := filepath.Join(t.TempDir(), "idf.txt")
	if err := idf.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadIDF(path)
	if err != nil || loaded.Len() != 5 {
		t.Fatalf("LoadIDF: %v, len %d", err, loaded.Len())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("Save left %d files in the directory, want 1", len(entries))
	}
}

func TestReadIDFErrors(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"empty", "", "empty file"},
		{"magic", "neardup-xyz 1\ndocs 1\n", "line 1"},
		{"newer", "neardup-idf 2\ndocs 1\n", "newer"},
		{"no docs", "neardup-idf 1\n", "line 2"},
		{"bad docs", "neardup-idf 1\ndocs -3\n", "line 2"},
		{"short hex", "neardup-idf 1\ndocs 2\n00ff 1\n", "line 3"},
		{"bad hex", "neardup-idf 1\ndocs 2\n000000000000000g 1\n", "line 3"},
		{"df too big", "neardup-idf 1\ndocs 2\n0000000000000001 3\n", "line 3"},
		{"df zero", "neardup-idf 1\ndocs 2\n0000000000000001 0\n", "line 3"},
		{"repeat", "neardup-idf 1\ndocs 2\n0000000000000001 1\n0000000000000001 1\n", "line 4"},
		{"meta late", "neardup-idf 1\ndocs 2\n0000000000000001 1\nmeta x\n", "line 4"},
		{"long line", "neardup-idf 1\ndocs 2\nmeta " + strings.Repeat("x", maxIDFLine) + "\n", "line 3"},
	}
	for _, c := range cases {
		_, err := ReadIDF(strings.NewReader(c.in))
		if !errors.Is(err, ErrIDFFormat) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrIDFFormat mentioning %q", c.name, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "bad-idf.txt")
	if err := os.WriteFile(path, []byte("not an idf file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadIDF(path); !errors.Is(err, ErrIDFFormat) || !strings.Contains(err.Error(), path) {
		t.Errorf("LoadIDF of a bad file: error %v, want ErrIDFFormat naming %s", err, path)
	}
	if _, err := LoadIDF(path + ".missing"); err == nil || !strings.Contains(err.Error(), path+".missing") {
		t.Errorf("LoadIDF of a missing file: error %v, want one naming the file", err)
	}
}

// FuzzReadIDF checks that ReadIDF never panics and that what it accepts
// survives a write and a read unchanged.
func FuzzReadIDF(f *testing.F) {
	var buf bytes.Buffer
	_, _ = sampleIDF().WriteTo(&buf)
	f.Add(buf.Bytes())
	f.Add([]byte("neardup-idf 1\ndocs 0\n"))
	f.Add([]byte("neardup-idf 1\ndocs 5\nmeta\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		idf, err := ReadIDF(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrIDFFormat) {
				t.Fatalf("error %v does not wrap ErrIDFFormat", err)
			}
			return
		}
		var out bytes.Buffer
		if _, err := idf.WriteTo(&out); err != nil {
			t.Fatal(err)
		}
		again, err := ReadIDF(&out)
		if err != nil {
			t.Fatalf("re-reading what WriteTo wrote: %v", err)
		}
		if again.Docs != idf.Docs || again.Len() != idf.Len() || again.Meta != strings.ReplaceAll(idf.Meta, "\n", " ") {
			t.Fatalf("round trip changed the table: docs %d→%d len %d→%d", idf.Docs, again.Docs, idf.Len(), again.Len())
		}
		for x, n := range idf.df {
			if again.df[x] != n {
				t.Fatalf("df(%x) %d→%d", x, n, again.df[x])
			}
		}
	})
}
