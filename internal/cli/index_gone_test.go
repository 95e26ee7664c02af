package cli

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// goneChildEnv runs the test binary as neardup (the arguments after the
// program's name) with 1 MiB memtables, the index folder given by the
// variable removed after the first batch of index add
// (TestIndexAddFolderRemovedFlush); with goneReplaceEnv set, an empty
// folder of the same name is made in its place.
const (
	goneChildEnv   = "NEARDUP_TEST_GONE_CHILD"
	goneReplaceEnv = "NEARDUP_TEST_GONE_REPLACE"
)

func init() {
	dir := os.Getenv(goneChildEnv)
	if dir == "" {
		return
	}
	testMemTableSize.Store(1 << 20)
	var once sync.Once
	hook := func(loc string) {
		if loc == dir {
			once.Do(func() {
				os.RemoveAll(dir)
				if os.Getenv(goneReplaceEnv) != "" {
					os.Mkdir(dir, 0o755)
				}
			})
		}
	}
	testHookIndexMidRun.Store(&hook)
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

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

// TestIndexAddFolderRemovedFlush removes the index folder after the first
// batch of an index add whose later batches fill memtables: pebble's log
// rotation (or flush) then fails to create its file in the folder gone
// and ends the process itself, before the command's own check. It ended
// with pebble's words ("pebble: open DIR/000004.log: no such file or
// directory", a stack); it must end as the command's check does: exit
// 1, the folder named as removed and the documents added lost, and
// leave no temporary -o file.
func TestIndexAddFolderRemovedFlush(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	in := writeDocs(t, 3000)
	outDir := t.TempDir()
	cmd := exec.Command(os.Args[0], "index", "add", "--batch", "100", "--index", dir, "-o", filepath.Join(outDir, "added.jsonl"), in)
	cmd.Env = append(os.Environ(), goneChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("index add with its folder removed: %v, want exit 1:\n%s", err, msg)
	}
	// The count is of the batches written before pebble failed: fewer
	// than all (the run did not reach its own check).
	re := regexp.MustCompile(`^neardup: --index ` + regexp.QuoteMeta(dir) + `: the index folder was removed while the command ran: the ([0-9]+) documents added are lost; create the index again and run the command again\n$`)
	m := re.FindStringSubmatch(msg)
	if m == nil || m[1] == "3000" {
		t.Errorf("index add with its folder removed says\n%s\nwant the folder removed and the documents added before pebble failed (fewer than 3000) lost, in one line", msg)
	}
	// Pebble ended the process, past the command's deferred Abort of
	// -o: its temporary file (.added.jsonl.tmp-*) was left behind, for
	// the next run to sweep. OnFatal removes it.
	if ents, err := os.ReadDir(outDir); err != nil || len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("-o's folder after pebble ended the run holds %q (%v), want nothing", names, err)
	}
}

// TestServeFolderRemoved removes the index folder of a running server,
// then stops it (SIGTERM): its close found the folder gone and it ended
// with the store's words ("closing the index: store: index folder
// removed: ..."). It must end as index add does: exit 1, naming --index
// and saying the folder was removed and the documents added lost.
func TestServeFolderRemoved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	srv := startServer(t, "--index", dir)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	err := srv.wait()
	msg := srv.stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve with its folder removed: %v, want exit 1:\n%s", err, msg)
	}
	want := "neardup: --index " + dir + ": the index folder was removed while the command ran: the documents added since the server started are lost; create the index again and run the command again\n"
	if !strings.HasSuffix(msg, want) || strings.Contains(msg, "store:") {
		t.Errorf("serve with its folder removed ends\n%s\nwant it to end\n%s", msg, want)
	}
}

// TestIndexAddFolderReplaced removes the index folder after the first
// batch of an index add whose later batches fill memtables, and makes an
// empty folder of the same name in its place (a script's rm -rf and
// mkdir). The run must end as with the folder removed: exit 1, the
// folder named as removed, in our words only (no "pebble:" line).
func TestIndexAddFolderReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	in := writeDocs(t, 3000)
	cmd := exec.Command(os.Args[0], "index", "add", "--batch", "100", "--index", dir, "-o", os.DevNull, in)
	cmd.Env = append(os.Environ(), goneChildEnv+"="+dir, goneReplaceEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	msg := stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("index add with its folder replaced: %v, want exit 1:\n%s", err, msg)
	}
	re := regexp.MustCompile(`^neardup: --index ` + regexp.QuoteMeta(dir) + `: the index folder was removed while the command ran: the ([0-9,]+) documents added are lost; create the index again and run the command again\n$`)
	if !re.MatchString(msg) {
		t.Errorf("index add with its folder replaced says\n%s\nwant the folder removed and the documents added lost, in one line", msg)
	}
}

// TestServeFolderReplaced removes the index folder of a running server
// and makes an empty one of the same name, then stops it (SIGTERM): the
// close flushed into the new folder, which holds none of the index, and
// serve said "flushed and closed", exit 0, the documents added lost. It
// must end as with the folder removed.
func TestServeFolderReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	createIndexAt(t, dir)
	srv := startServer(t, "--index", dir)
	resp, err := http.Post(srv.addr+"/v1/add", "application/json", strings.NewReader(`{"id": "a", "text": "a document added before the folder is replaced"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("add: %s", resp.Status)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	err = srv.wait()
	msg := srv.stderr.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve with its folder replaced: %v, want exit 1:\n%s", err, msg)
	}
	want := "neardup: --index " + dir + ": the index folder was removed while the command ran: the documents added since the server started are lost; create the index again and run the command again\n"
	if !strings.HasSuffix(msg, want) || strings.Contains(msg, "store:") || strings.Contains(msg, "pebble:") {
		t.Errorf("serve with its folder replaced ends\n%s\nwant it to end\n%s", msg, want)
	}
}
