package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIndexCompactShrinks removes most of an index's documents and
// compacts it: the summary's sizes are the index folder's bytes before and
// after, so the second is what is left on disk and below the first (it
// reported pebble's usage, which counts the files the compaction made
// obsolete until they are deleted in the background: "6348150 -> 8028927
// bytes" for a folder of 3.8 MB after compacting away 1,000 of 2,225
// documents).
func TestIndexCompactShrinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	in := writeDocs(t, 4000)
	var out, errb bytes.Buffer
	if code := Main([]string{"index", "add", "-q", "--index", dir, in}, nil, &out, &errb); code != 0 {
		t.Fatalf("index add = exit %d:\n%s", code, errb.String())
	}
	var ids strings.Builder
	for i := range 3500 {
		fmt.Fprintf(&ids, "d%d\n", i)
	}
	idsFile := filepath.Join(t.TempDir(), "ids.txt")
	if err := os.WriteFile(idsFile, []byte(ids.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"index", "remove", "-q", "--index", dir, "--ids-file", idsFile}, nil, &out, &errb); code != 0 {
		t.Fatalf("index remove = exit %d:\n%s", code, errb.String())
	}
	errb.Reset()
	if code := Main([]string{"index", "compact", "--index", dir}, nil, &out, &errb); code != 0 {
		t.Fatalf("index compact = exit %d:\n%s", code, errb.String())
	}
	m := regexp.MustCompile(`compacted .*: (\d+) -> (\d+) bytes`).FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no sizes in %q", errb.String())
	}
	before, _ := strconv.ParseInt(m[1], 10, 64)
	after, _ := strconv.ParseInt(m[2], 10, 64)
	size, err := folderBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	if after >= before || after != size {
		t.Errorf("%q: after compacting away 3,500 of 4,000 documents, want fewer bytes than before, and the folder's %d", errb.String(), size)
	}
}
