package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
)

// TestTooLargeHint: the --max-doc-bytes hint suggests a limit that admits
// the record (the power of two above its length; it suggested 64MB even
// for a 100 MB record), says so when the record's length is not known, and
// says when no limit admits it.
func TestTooLargeHint(t *testing.T) {
	rec := func(e *corpus.SizeError) error {
		return &corpus.RecordError{File: "x.txt", Record: 2, Err: e}
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{rec(&corpus.SizeError{Length: 100_000_000, Limit: 64 << 20}),
			"--max-doc-bytes raises the limit (now 64 MiB); --max-doc-bytes 128MiB admits this record of 100,000,000 bytes"},
		{rec(&corpus.SizeError{Length: 3000, Limit: 2000}),
			"--max-doc-bytes raises the limit (now 2,000 bytes); --max-doc-bytes 4KiB admits this record of 3,000 bytes"},
		{rec(&corpus.SizeError{Length: 1<<30 + 1, Limit: 1 << 30}),
			"--max-doc-bytes 2147483647 admits this record of 1,073,741,825 bytes"},
		{rec(&corpus.SizeError{Length: 3 << 30, Limit: 16 << 20}),
			"the record takes 3,221,225,472 bytes, more than the largest --max-doc-bytes (2,147,483,647 bytes): it cannot be read; --skip-invalid leaves it out"},
		{rec(&corpus.SizeError{Limit: 64 << 20}),
			"--max-doc-bytes raises the limit (now 64 MiB); the record is longer than 64 MiB: raise --max-doc-bytes above its length"},
		{fmt.Errorf("x: %w", corpus.ErrTooLarge), "--max-doc-bytes raises the limit (default 16.0 MiB), e.g. --max-doc-bytes 64MB"},
	} {
		if got := errorHint(c.err); !strings.HasSuffix(got, c.want) {
			t.Errorf("%v:\n got %q\nwant %q", c.err, got, c.want)
		}
	}
}

// TestWalkedFrom: the --exclude pattern the hint gives for a file that
// walking an input directory found is its path relative to the
// directory, its glob characters escaped and the word quoted for a
// shell; a file named on its own, or outside the inputs, has none.
func TestWalkedFrom(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "crawl")
	if err := os.MkdirAll(filepath.Join(sub, "meta data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file   string
		inputs []string
		want   string // the pattern as the hint writes it; "" for none
	}{
		{filepath.Join(sub, "meta data", "it's[1].jsonl"), []string{sub}, `'meta data/it'\''s\[1\].jsonl'`},
		{filepath.Join(sub, "info.jsonl"), []string{dir + "/"}, "crawl/info.jsonl"},
		{filepath.Join(sub, "info.jsonl"), []string{filepath.Join(sub, "info.jsonl"), sub}, ""},
		{filepath.Join(dir, "other.jsonl"), []string{sub}, ""},
		{"s3://bucket/crawl/x/m.jsonl", []string{"s3://bucket/crawl/"}, "x/m.jsonl"},
		{"-", []string{"-"}, ""},
	} {
		got := ""
		if _, rel, ok := walkedFrom(c.file, c.inputs); ok {
			got = shellWord(globEscape(rel))
		}
		if got != c.want {
			t.Errorf("%s in %q: %q, want %q", c.file, c.inputs, got, c.want)
		}
	}
}
