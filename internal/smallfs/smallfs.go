// Package smallfs mounts small file systems for tests of what a program
// does when its disk fills up: a tmpfs of a given size, mounted on a
// temporary directory and unmounted when the test ends.
//
// Mounting needs root (CAP_SYS_ADMIN) on Linux. Without it the test is
// skipped with a message saying so, unless the environment variable
// NEARDUP_REQUIRE_ROOT is 1 (as in CI), which makes it fail instead.
package smallfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// RequireRootEnv is the environment variable that turns a skip for want
// of root into a failure.
const RequireRootEnv = "NEARDUP_REQUIRE_ROOT"

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// returns the directory; it is unmounted when t ends.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "smallfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mount(dir, size); err != nil {
		msg := "mounting a tmpfs (needs root on Linux): " + err.Error()
		if os.Getenv(RequireRootEnv) == "1" {
			t.Fatalf("%s; %s=1 requires this test to run", msg, RequireRootEnv)
		}
		t.Skipf("%s; skipped (set %s=1 to make this a failure)", msg, RequireRootEnv)
	}
	t.Cleanup(func() { unmount(dir) })
	return dir
}

// Fill writes a file at path that leaves at most leave bytes free on its
// file system (a write to a full tmpfs fails with ENOSPC), and returns the
// bytes written. Other processes may free space meanwhile (a database
// deleting obsolete files): Fill writes until the space stays taken.
func Fill(t testing.TB, path string, leave int64) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	stable := 0
	for range 50 {
		free, err := Free(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if free <= leave {
			// Twice in a row, 20 ms apart: others have settled.
			if stable++; stable == 2 {
				return n
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		stable = 0
		for want := free - leave; want > 0; {
			m, err := f.Write(buf[:min(int64(len(buf)), want)])
			n += int64(m)
			want -= int64(m)
			if err != nil {
				break // full already
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// ReadOnly makes dir unwritable to this process until t ends: as root,
// which may write anything, a read-only bind mount of dir on itself
// (writes fail with EROFS; needs Linux, skipped or failed as Mount);
// otherwise dir and the files in it lose their write permissions (writes
// fail with EACCES).
func ReadOnly(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() == 0 {
		if err := bindReadOnly(dir); err != nil {
			msg := "mounting a read-only bind mount (needs root on Linux): " + err.Error()
			if os.Getenv(RequireRootEnv) == "1" {
				t.Fatalf("%s; %s=1 requires this test to run", msg, RequireRootEnv)
			}
			t.Skipf("%s; skipped (set %s=1 to make this a failure)", msg, RequireRootEnv)
		}
		t.Cleanup(func() { unmount(dir) })
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if err := os.Chmod(p, 0o444); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, 0o644) })
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
}
