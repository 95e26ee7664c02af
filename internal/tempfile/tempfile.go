// Package tempfile names temporary files after the process that owns them,
// so that a later run can recognise the files of a process that died
// without removing them (kill -9, out of memory, power loss) and remove
// them.
//
// Create names a file PREFIX + PID + "-" + START + "-" + RANDOM + SUFFIX,
// where START is the owner's start time: on Linux the starttime field of
// /proc/PID/stat (clock ticks since boot), which tells a dead owner from a
// new process that was given the same pid. Sweep removes the files of a
// prefix and suffix whose owner is gone: on Linux, when /proc/PID/stat is
// missing or names another start time; on other systems, where the start
// time of another process cannot be read portably, when the file has not
// been modified for MaxAge. Files of the calling process and files that do
// not follow the naming (another program's, or an older neardup's) are
// never touched.
package tempfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxAge is how long a file must have gone unmodified before Sweep removes
// it on a system without /proc.
const MaxAge = 24 * time.Hour

// Swept is what Sweep removed.
type Swept struct {
	Files int
	Bytes int64
	// Names are the removed files' paths.
	Names []string
}

// Add adds o's counts and names to s.
func (s *Swept) Add(o Swept) {
	s.Files += o.Files
	s.Bytes += o.Bytes
	s.Names = append(s.Names, o.Names...)
}

var self = sync.OnceValue(func() string {
	pid := os.Getpid()
	if st, ok := startTime(pid); ok {
		return fmt.Sprintf("%d-%d", pid, st)
	}
	return fmt.Sprintf("%d-0", pid)
})

// Tag returns the calling process's owner tag, "PID-START".
func Tag() string { return self() }

// Create creates a new file in dir ("" for os.TempDir()) named after the
// calling process (see the package comment), opened for reading and
// writing with mode 0600, like os.CreateTemp.
func Create(dir, prefix, suffix string) (*os.File, error) {
	if strings.ContainsRune(prefix+suffix, '*') {
		return nil, fmt.Errorf("tempfile: pattern contains '*'")
	}
	return os.CreateTemp(dir, prefix+self()+"-*"+suffix)
}

// Pattern is the prefix and suffix of the files Create names for one use
// (a run's sketches, a sort's runs).
type Pattern struct {
	Prefix, Suffix string
}

// Sweep removes the files in dir ("" for os.TempDir()) named by Create with
// prefix and suffix whose owner is gone. A file it cannot remove (another
// user's, a race with another sweeper) is left alone without error; only
// a directory that cannot be listed is an error.
func Sweep(dir, prefix, suffix string) (Swept, error) {
	return SweepAll(dir, Pattern{prefix, suffix})
}

// SweepAll is Sweep for the files of any of the patterns, listing dir
// once.
func SweepAll(dir string, patterns ...Pattern) (Swept, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	var out Swept
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out, err
	}
	now := time.Now()
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		for _, pat := range patterns {
			pid, start, ok := parse(name, pat.Prefix, pat.Suffix)
			if !ok || pid == os.Getpid() {
				continue
			}
			info, err := e.Info()
			if err != nil || !abandoned(pid, start, info.ModTime(), now) {
				break
			}
			p := filepath.Join(dir, name)
			if os.Remove(p) == nil {
				out.Files++
				out.Bytes += info.Size()
				out.Names = append(out.Names, p)
			}
			break
		}
	}
	return out, nil
}

// parse returns the owner of a file named by Create with prefix and suffix.
func parse(name, prefix, suffix string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, 0, false
	}
	if rest, ok = strings.CutSuffix(rest, suffix); !ok {
		return 0, 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || parts[2] == "" {
		return 0, 0, false
	}
	p, err1 := strconv.Atoi(parts[0])
	s, err2 := strconv.ParseUint(parts[1], 10, 64)
	if _, err3 := strconv.ParseUint(parts[2], 10, 64); err1 != nil || err2 != nil || err3 != nil || p <= 0 {
		return 0, 0, false
	}
	return p, s, true
}

// abandoned reports whether the owner (pid, start) of a file last modified
// at mtime is gone.
func abandoned(pid int, start uint64, mtime, now time.Time) bool {
	if _, ok := startTime(os.Getpid()); ok {
		st, alive := startTime(pid)
		return !alive || st != start
	}
	return now.Sub(mtime) > MaxAge
}

// startTime returns the starttime field (22nd) of /proc/PID/stat; false
// when it cannot be read (no such process, or no /proc).
func startTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses: the fields after it start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field 22 is f[19].
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}
