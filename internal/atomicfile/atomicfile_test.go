package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestCommitReplaces(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing string // "" means no file before
		perm     os.FileMode
		wantPerm os.FileMode
	}{
		{name: "new", wantPerm: 0o644},
		{name: "replace", existing: "old", perm: 0o600, wantPerm: 0o600},
		{name: "replace-0640", existing: "old contents that are longer", perm: 0o640, wantPerm: 0o640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "out.jsonl")
			if tc.existing != "" {
				if err := os.WriteFile(path, []byte(tc.existing), tc.perm); err != nil {
					t.Fatal(err)
				}
				os.Chmod(path, tc.perm)
			}
			f, err := Create(path)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(f, "hello ")
			f.WriteString("world\n")
			// Before Commit the target is unchanged.
			if got, _ := os.ReadFile(path); string(got) != tc.existing {
				t.Errorf("before Commit: target = %q, want %q", got, tc.existing)
			}
			if err := f.Commit(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != "hello world\n" {
				t.Errorf("after Commit: target = %q, %v; want %q", got, err, "hello world\n")
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != tc.wantPerm {
				t.Errorf("perm = %v, want %v", st.Mode().Perm(), tc.wantPerm)
			}
			if names := entries(t, dir); len(names) != 1 {
				t.Errorf("directory holds %v, want only out.jsonl", names)
			}
			if err := f.Abort(); err != nil {
				t.Errorf("Abort after Commit = %v, want nil", err)
			}
			if _, err := f.Write([]byte("x")); !errors.Is(err, ErrClosed) {
				t.Errorf("Write after Commit = %v, want ErrClosed", err)
			}
			if err := f.Commit(); !errors.Is(err, ErrClosed) {
				t.Errorf("second Commit = %v, want ErrClosed", err)
			}
		})
	}
}

func TestAbortKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	os.WriteFile(path, []byte("keep me"), 0o644)
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(strings.Repeat("x", 1<<20))) // past the buffer: the temp file has data
	if names := entries(t, dir); len(names) != 2 {
		t.Errorf("while writing, directory holds %v, want target and one temp file", names)
	}
	if err := f.Abort(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "keep me" {
		t.Errorf("after Abort: target = %q, want %q", got, "keep me")
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "out.txt" {
		t.Errorf("after Abort: directory holds %v, want [out.txt]", names)
	}
}

func TestAbortNewLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	f.Abort()
	if names := entries(t, dir); len(names) != 0 {
		t.Errorf("after Abort: directory holds %v, want nothing", names)
	}
}

func TestSymlinkKept(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.txt")
	link := filepath.Join(dir, "link.txt")
	os.WriteFile(real, []byte("old"), 0o644)
	if err := os.Symlink("real.txt", link); err != nil {
		t.Skip("no symlinks:", err)
	}
	f, err := Create(link)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link was replaced: %v %v", st.Mode(), err)
	}
	if got, _ := os.ReadFile(real); string(got) != "new" {
		t.Errorf("link target = %q, want %q", got, "new")
	}
}

func TestDevNull(t *testing.T) {
	st0, err := os.Stat("/dev/null")
	if err != nil {
		t.Skip("no /dev/null")
	}
	f, err := Create("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if f.target != "" {
		t.Fatalf("/dev/null would be replaced by a rename of %s", f.f.Name())
	}
	f.WriteString("discarded")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	st1, err := os.Stat("/dev/null")
	if err != nil || st1.Mode() != st0.Mode() || !os.SameFile(st0, st1) {
		t.Errorf("/dev/null changed: %v -> %v (%v)", st0.Mode(), st1.Mode(), err)
	}
	f2, err := Create("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	f2.WriteString("x")
	if err := f2.Abort(); err != nil {
		t.Errorf("Abort on /dev/null = %v", err)
	}
	if st2, _ := os.Stat("/dev/null"); !os.SameFile(st0, st2) {
		t.Error("/dev/null replaced after Abort")
	}
}

func TestFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no mkfifo:", err)
	}
	done := make(chan string)
	go func() {
		r, err := os.Open(fifo)
		if err != nil {
			done <- "open: " + err.Error()
			return
		}
		b, _ := io.ReadAll(r)
		r.Close()
		done <- string(b)
	}()
	f, err := Create(fifo)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("through the pipe")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got != "through the pipe" {
		t.Errorf("read from pipe %q, want %q", got, "through the pipe")
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %v, want only the pipe", names)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("pipe replaced by %v", st.Mode())
	}
}

func TestStdout(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	f, err := Create("-")
	os.Stdout = old
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("to stdout\n")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	// Commit must not close stdout: a second write still works.
	if _, err := w.WriteString("still open"); err != nil {
		t.Errorf("stdout closed by Commit: %v", err)
	}
	w.Close()
	got, _ := io.ReadAll(r)
	if string(got) != "to stdout\nstill open" {
		t.Errorf("stdout got %q", got)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, path string }{
		{"empty", ""},
		{"directory", dir},
		{"missing-dir", filepath.Join(dir, "no", "such", "file")},
	} {
		if f, err := Create(tc.path); err == nil {
			f.Abort()
			t.Errorf("%s: Create(%q) succeeded, want an error", tc.name, tc.path)
		}
	}
}

func TestCommitFailsWhenDirGone(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	f, err := Create(filepath.Join(sub, "out"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("x")
	os.RemoveAll(sub)
	if err := f.Commit(); err == nil {
		t.Error("Commit succeeded although the directory was removed")
	}
}

// TestTempName: the temporary file of a regular output is named, in the
// target's folder, so that a process ending without Abort removes it;
// standard output and special files have none.
func TestTempName(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(filepath.Join(dir, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	names := entries(t, dir)
	if len(names) != 1 || f.TempName() != filepath.Join(dir, names[0]) {
		t.Errorf("TempName = %q, the folder holds %v", f.TempName(), names)
	}
	for _, path := range []string{"-", os.DevNull} {
		g, err := Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := g.TempName(); n != "" {
			t.Errorf("TempName of %s = %q, want none", path, n)
		}
		g.Abort()
	}
}
