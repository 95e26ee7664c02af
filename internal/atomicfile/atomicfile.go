// Package atomicfile writes output files so that readers never see a
// partial file.
//
// Create picks the strategy from what the path names:
//
//   - "-" writes to standard output. Commit flushes; standard output is
//     never closed.
//   - An existing special file (character or block device, named pipe,
//     socket), such as /dev/null or /dev/stdout, is opened and written
//     directly. No temporary file is created beside it and nothing is renamed
//     over it: as root, a rename would replace /dev/null itself.
//   - A URL whose scheme was registered with RegisterScheme (s3://, gs://,
//     by package internal/objstore) is written through the writer that
//     scheme's function creates: one upload, the object appearing only on
//     Commit; Abort leaves nothing.
//   - Anything else (a regular file, or a path that does not exist yet) is
//     written to a temporary file in the same directory, named
//     ".NAME.tmp-PID-START-*" after its owner (package internal/tempfile).
//     Create first removes the temporary files of NAME that a process
//     killed before Commit or Abort left behind (File.Swept reports them).
//     Commit flushes, fsyncs, closes and renames it over the
//     target, then fsyncs the directory; Abort closes and removes it, leaving
//     an existing target untouched. A symbolic link is resolved first, so
//     the file it points to is replaced and the link is kept. The new file
//     keeps the permission bits of the file it replaces, or gets 0644.
//
// Writes are buffered. The usual pattern is
//
//	f, err := atomicfile.Create(path)
//	if err != nil { return err }
//	defer f.Abort() // no-op after a successful Commit
//	... write to f ...
//	return f.Commit()
//
// A File is not safe for concurrent use.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/neardup/neardup/internal/tempfile"
)

// ErrClosed is returned by Write and Commit after Commit or Abort.
var ErrClosed = errors.New("atomicfile: file already committed or aborted")

const bufSize = 256 << 10

// Remote is the writer of an output in object storage: what Commit and
// Abort of a File do for a URL.
type Remote interface {
	Write(p []byte) (int, error)
	// Commit makes the object appear, whole; on error nothing appears.
	Commit() error
	// Abort gives the upload up, leaving nothing.
	Abort() error
}

var (
	schemesMu sync.RWMutex
	schemes   = map[string]func(url string) (Remote, error){}
)

// RegisterScheme makes Create write the URLs "scheme://..." through
// create. Package internal/objstore registers s3 and gs.
func RegisterScheme(scheme string, create func(url string) (Remote, error)) {
	schemesMu.Lock()
	defer schemesMu.Unlock()
	schemes[scheme] = create
}

// File is an output file being written. It implements io.Writer.
type File struct {
	remote Remote   // an object being uploaded, else nil
	name   string   // the path given to Create
	target string   // the path renamed over on Commit ("" when writing directly)
	f      *os.File // the temporary file, the special file, or os.Stdout
	w      *bufio.Writer
	stdout bool
	done   bool
	err    error // sticky write error
	swept  tempfile.Swept
}

// Create starts writing the output file path; see the package comment for
// what happens for "-", special files and regular files.
func Create(path string) (*File, error) {
	if path == "" {
		return nil, errors.New("atomicfile: empty path")
	}
	if path == "-" {
		return &File{name: path, f: os.Stdout, w: bufio.NewWriterSize(os.Stdout, bufSize), stdout: true}, nil
	}
	if scheme, _, ok := strings.Cut(path, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, `/\.`) {
		schemesMu.RLock()
		create := schemes[scheme]
		schemesMu.RUnlock()
		if create == nil {
			return nil, fmt.Errorf("create %s: unknown storage scheme %q (use a local path, s3:// or gs://)", path, scheme+"://")
		}
		r, err := create(path)
		if err != nil {
			return nil, err
		}
		return &File{name: path, remote: r, w: bufio.NewWriterSize(r, bufSize)}, nil
	}
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	perm := fs.FileMode(0o644)
	st, err := os.Stat(target)
	switch {
	case err == nil && st.IsDir():
		return nil, &fs.PathError{Op: "create", Path: path, Err: errors.New("is a directory")}
	case err == nil && !st.Mode().IsRegular():
		// A device, pipe or socket: write in place, never rename over it.
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{name: path, f: f, w: bufio.NewWriterSize(f, bufSize)}, nil
	case err == nil:
		perm = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	// Best effort: a directory that cannot be listed fails CreateTemp
	// below with a clearer error.
	swept, _ := tempfile.Sweep(dir, "."+base+".tmp-", "")
	f, err := tempfile.Create(dir, "."+base+".tmp-", "")
	if err != nil {
		return nil, createErr(path, dir, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	return &File{name: path, target: target, f: f, w: bufio.NewWriterSize(f, bufSize), swept: swept}, nil
}

// createErr words the failure to create the temporary file beside path
// in dir as a failure to create path: the temporary file's name means
// nothing to the user, and a missing directory is said as such. It wraps
// the cause (fs.ErrNotExist, fs.ErrPermission, ...).
func createErr(path, dir string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, fs.ErrNotExist) {
		if d := filepath.Dir(path); d != "." {
			dir = d
		}
		err = &dirError{dir: dir, err: err}
	}
	return &fs.PathError{Op: "create", Path: path, Err: err}
}

// dirError is a missing directory of an output.
type dirError struct {
	dir string
	err error
}

func (e *dirError) Error() string { return "the directory " + e.dir + " does not exist" }
func (e *dirError) Unwrap() error { return e.err }

// Swept returns the abandoned temporary files of the same target that
// Create removed: those of processes killed while writing it.
func (f *File) Swept() tempfile.Swept { return f.swept }

// Name returns the path given to Create.
func (f *File) Name() string { return f.name }

// TempName returns the path of the temporary file that Commit renames
// over the target, or "" when there is none (standard output, a special
// file, a remote object). It may be called from any goroutine: a process
// that ends without Abort (os.Exit from another goroutine) removes it by
// that path.
func (f *File) TempName() string {
	if f.target == "" || f.f == nil {
		return ""
	}
	return f.f.Name()
}

// Write writes p to the buffer. Errors are sticky: after one, every Write
// and Commit fails.
func (f *File) Write(p []byte) (int, error) {
	if f.done {
		return 0, ErrClosed
	}
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.Write(p)
	if err != nil {
		f.err = fmt.Errorf("write %s: %w", f.name, err)
		return n, f.err
	}
	return n, nil
}

// WriteString is like Write.
func (f *File) WriteString(s string) (int, error) {
	if f.done {
		return 0, ErrClosed
	}
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.w.WriteString(s)
	if err != nil {
		f.err = fmt.Errorf("write %s: %w", f.name, err)
		return n, f.err
	}
	return n, nil
}

// Commit makes the output final: it flushes the buffer and, for a regular
// file, fsyncs the temporary file and renames it over the target. On error
// the temporary file is removed and the target is left as it was.
func (f *File) Commit() error {
	if f.done {
		return ErrClosed
	}
	f.done = true
	err := f.err
	if err == nil {
		if e := f.w.Flush(); e != nil {
			err = fmt.Errorf("write %s: %w", f.name, e)
		}
	}
	if f.stdout {
		return err
	}
	if f.remote != nil {
		if err != nil {
			f.remote.Abort()
			return err
		}
		return f.remote.Commit()
	}
	if f.target == "" { // special file
		if e := f.f.Close(); err == nil && e != nil {
			err = fmt.Errorf("close %s: %w", f.name, e)
		}
		return err
	}
	if err == nil {
		if e := f.f.Sync(); e != nil {
			err = fmt.Errorf("sync %s: %w", f.name, e)
		}
	}
	if e := f.f.Close(); err == nil && e != nil {
		err = fmt.Errorf("close %s: %w", f.name, e)
	}
	if err == nil {
		if e := os.Rename(f.f.Name(), f.target); e != nil {
			err = e
		}
	}
	if err != nil {
		os.Remove(f.f.Name())
		return err
	}
	syncDir(filepath.Dir(f.target))
	return nil
}

// syncDir fsyncs a directory so that a rename in it is durable. Errors are
// ignored: some file systems do not support it.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}

// Abort gives the output up: for a regular file the temporary file is
// removed and an existing target is left untouched. For standard output
// and special files, what was already flushed stays written; the rest of
// the buffer is dropped. Abort after Commit or Abort does nothing and
// returns nil, so it can be deferred.
func (f *File) Abort() error {
	if f.done {
		return nil
	}
	f.done = true
	if f.stdout {
		return nil
	}
	if f.remote != nil {
		return f.remote.Abort()
	}
	err := f.f.Close()
	if f.target != "" {
		if e := os.Remove(f.f.Name()); e != nil && err == nil {
			err = e
		}
	}
	return err
}
