package cli

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/smallfs"
	"github.com/neardup/neardup/store"
)

// TestIndexAddDiskFull runs `index add` into an index whose disk fills up
// (the default reserve of 64 MiB on a tmpfs with a little more free): a
// clean error naming the cause, the documents added and the flag of the
// reserve (without the store's package name), exit code 1, no
// panic, and an index that reopens with exactly those documents.
func TestIndexAddDiskFull(t *testing.T) {
	mnt := smallfs.Mount(t, 72<<20)
	dir := filepath.Join(mnt, "idx")
	createIndexAt(t, dir)
	smallfs.Fill(t, filepath.Join(mnt, "ballast"), 4*store.DefaultMemTableSize+(3<<20)/2)
	in := writeDocs(t, 8000)
	var out, errb bytes.Buffer
	code := Main([]string{"index", "add", "--index", dir, in}, nil, &out, &errb)
	msg := errb.String()
	if code != 1 || !strings.Contains(msg, "not enough free disk space") || !strings.Contains(msg, "--min-free-mb") || strings.Contains(msg, "store:") || strings.Contains(msg, "panic") {
		t.Fatalf("index add on a filling disk = exit %d:\n%s", code, msg)
	}
	// Worded with the flag, without the store's package words ("index
	// DIR: store: not enough ..." before).
	if want := "neardup: --index " + dir + ": not enough free disk space for the index: "; !strings.HasPrefix(msg, want) || strings.Contains(msg, "store:") {
		t.Errorf("index add on a filling disk said:\n%s\nwant it to begin %q, without \"store:\"", msg, want)
	}
	m := regexp.MustCompile(`the ([\d,]+) documents added before`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the error does not say how many documents were added:\n%s", msg)
	}
	// With thousands separators, as the summaries write counts.
	added, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	if m[1] != number(added) {
		t.Errorf("the error writes the documents added as %s, want %s", m[1], number(added))
	}
	if added == 0 || added >= 8000 {
		t.Fatalf("%d documents added: the test does not fill the disk mid-way:\n%s", added, msg)
	}
	s, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("reopening the index: %v", err)
	}
	if s.Len() != int64(added) {
		t.Errorf("the index has %d documents, the error said %d", s.Len(), added)
	}
	for _, id := range []string{"d0", "d" + strconv.Itoa(added-1)} {
		if _, err := s.Get(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A smaller reserve lets the rest in.
	errb.Reset()
	if code := Main([]string{"index", "add", "--index", dir, "--min-free-mb", "1", "--skip-invalid", in}, nil, &out, &errb); code != 0 {
		t.Fatalf("index add --min-free-mb 1 = exit %d:\n%s", code, errb.String())
	}
	s, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Len() != 8000 {
		t.Errorf("after adding the rest with --min-free-mb 1: %d documents, want 8000", s.Len())
	}
}
