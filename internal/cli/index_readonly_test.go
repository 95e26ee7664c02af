package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/smallfs"
)

// TestIndexReadOnlyFolder: an index in a folder the user may not write
// (a read-only mount, a published copy) is queried, its stats printed and
// used by dedup --against; adding to it fails, exit 1, saying the folder
// cannot be written, not that the index may be damaged (before, every
// command said "the index cannot be opened (open DIR/LOCK: permission
// denied): if it is damaged, restore it from a copy").
func TestIndexReadOnlyFolder(t *testing.T) {
	tmp := t.TempDir()
	ix := filepath.Join(tmp, "ix")
	in := filepath.Join(tmp, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"id":"a","text":"the quick brown fox jumps over the lazy dog once more today"}`+"\n"+`{"id":"b","text":"a wholly different sentence about rivers, hills and the sea at dawn"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(args, nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("index", "create", "--index", ix); code != 0 {
		t.Fatalf("create: %d %s", code, e)
	}
	if code, _, e := run("index", "add", "--index", ix, in); code != 0 {
		t.Fatalf("add: %d %s", code, e)
	}
	smallfs.ReadOnly(t, ix)

	res := filepath.Join(tmp, "q.jsonl")
	if code, _, e := run("index", "query", "--index", ix, in, "-o", res); code != 0 {
		t.Errorf("query of a read-only index folder: exit %d, stderr %s", code, e)
	} else if b, _ := os.ReadFile(res); strings.Count(string(b), `"duplicate":true`) != 2 {
		t.Errorf("query of a read-only index folder wrote %q, want both documents duplicates", b)
	}
	if code, out, e := run("index", "stats", "--index", ix); code != 0 || !strings.Contains(out, "documents:    2") {
		t.Errorf("stats of a read-only index folder: exit %d, stdout %q, stderr %s", code, out, e)
	}
	if code, _, e := run("dedup", "--against", ix, in, "-o", os.DevNull); code != 0 {
		t.Errorf("dedup --against a read-only index folder: exit %d, stderr %s", code, e)
	}
	code, _, e := run("index", "add", "--index", ix, "--skip-invalid", in)
	if code != ExitFailure || !strings.Contains(e, "--index "+ix+": the index folder cannot be written (") || strings.Contains(e, "damaged") {
		t.Errorf("add to a read-only index folder: exit %d, stderr %s; want %d and 'the index folder cannot be written'", code, e, ExitFailure)
	}
}
