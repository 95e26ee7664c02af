package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestCLIReference: docs/cli.md is what WriteReference writes from the
// command tree, so that a flag, a command or a help text changed without
// regenerating the reference fails here.
func TestCLIReference(t *testing.T) {
	var got bytes.Buffer
	if err := WriteReference(&got); err != nil {
		t.Fatal(err)
	}
	const path = "docs/cli.md"
	want, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("%v: run `%s` from the repository root to write it", err, ReferenceCommand)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("%s is out of date (%s): run `%s` from the repository root (or go generate ./internal/cli) and commit it", path, firstDiff("committed", want, "generated", got.Bytes()), ReferenceCommand)
	}
}

// TestCLIReferenceMachineIndependent: the reference is the same whatever
// the machine's temporary directory, home, working directory and number of
// usable cores, so that TestCLIReference passes everywhere. A flag whose
// default were os.TempDir() or runtime.GOMAXPROCS(0) would fail here (the
// number of CPUs itself cannot be changed in a test; GOMAXPROCS is what
// code that sizes by cores should read, and -j's 0 stands for it).
func TestCLIReferenceMachineIndependent(t *testing.T) {
	gen := func() []byte {
		var b bytes.Buffer
		if err := WriteReference(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	first := gen()
	dir := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Chdir(dir)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 3))
	if second := gen(); !bytes.Equal(first, second) {
		t.Errorf("the reference changed with TMPDIR, HOME, the working directory and GOMAXPROCS (%s): a flag default or help text depends on the machine; give it a fixed default (0 for the number of cores, empty for the system's temporary directory) and say what it means in its help", firstDiff("before", first, "after", second))
	}
}

// firstDiff describes the first line where a and b differ.
func firstDiff(aName string, a []byte, bName string, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: %s %s, %s %s", i+1, aName, quoteLine(x, i < len(al)), bName, quoteLine(y, i < len(bl)))
		}
	}
	return "same lines"
}

func quoteLine(s string, ok bool) string {
	if !ok {
		return "(end of file)"
	}
	return strconv.Quote(s)
}

// TestFence: a long help that quotes a Markdown code block does not end the
// reference's code block early.
func TestFence(t *testing.T) {
	for s, want := range map[string]string{"plain": "```", "a ``` b": "````", "````": "`````"} {
		if got := fence(s); got != want {
			t.Errorf("fence(%q) = %q, want %q", s, got, want)
		}
	}
}
