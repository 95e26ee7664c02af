package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestIndexAddFolderRemoved removes the index folder after the first
// batch of an index add: pebble keeps writing to the files it holds open,
// and the run ended exit 0 with the documents lost. It must fail, exit 1,
// naming --index and saying the folder was removed, and leave no -o file.
func TestIndexAddFolderRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	in := writeDocs(t, 300)
	var once sync.Once
	hook := func(loc string) {
		if loc == dir {
			once.Do(func() {
				if err := os.RemoveAll(dir); err != nil {
					t.Error(err)
				}
			})
		}
	}
	testHookIndexMidRun.Store(&hook)
	defer testHookIndexMidRun.Store(nil)
	var out, errb bytes.Buffer
	outFile := filepath.Join(t.TempDir(), "added.jsonl")
	code := Main([]string{"index", "add", "--batch", "100", "--index", dir, "-o", outFile, in}, nil, &out, &errb)
	msg := errb.String()
	if code != 1 || !strings.Contains(msg, "--index "+dir+": the index folder was removed while the command ran") || !strings.Contains(msg, "are lost") {
		t.Errorf("index add with its folder removed = exit %d:\n%s\nwant exit 1 saying the folder was removed", code, msg)
	}
	if strings.Contains(msg, "added 300 of") {
		t.Errorf("the summary reports success:\n%s", msg)
	}
	// Nor does the -o file, whose lines say "added": true (it was put in
	// place before the check).
	if _, err := os.Stat(outFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("-o %s after the failed run: %v, want no file", outFile, err)
	}
}
