// Package objstore reads and writes the files of a data location: a local
// folder, or an object-storage prefix (s3://bucket/prefix,
// gs://bucket/prefix).
//
// A Folder names its files by slash-separated names relative to the
// location. Every write is whole or absent: Put writes a local file to a
// temporary file and renames it (package internal/atomicfile), and an
// object in one upload, so a reader, a second writer of the same name or a
// writer killed half-way never leaves a partial file under its name. That
// is what lets a task run twice, or on two nodes at once, and still leave
// one good copy.
//
// Reads are large and sequential: one stream per file (Open), or one per
// section of a file (OpenRange), whose index the reader found with one
// small read of the file's end (ReadTail). A ranged read is of one
// version of the file (Version: an S3 ETag, a GCS generation, a local
// file's size and time), so that a section and the index that placed it
// come from the same content; a read that breaks goes on from the bytes
// delivered (S3 and GCS). The storage's checksum (GCS's CRC32C) covers
// whole objects only: a ranged read is checked by its caller, against a
// checksum of the section that the file itself carries (package
// internal/staged's packs: a CRC32C a section in the index).
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/neardup/neardup/internal/atomicfile"
)

// ErrNotExist is wrapped by the errors of Open for a missing file.
var ErrNotExist = fs.ErrNotExist

// Folder is a data location. It is safe for concurrent use.
type Folder struct {
	url     string // as given, without a trailing slash
	backend backend
	// OnRead, when set, is called with a file's name before each
	// request that reads the file (Open, ReadAll, ReadTail, and
	// OpenRange unless it reads nothing; not Exists or List), from the
	// goroutine that makes it: tests count a job's reads with it. Set it
	// before the Folder is shared; it must be safe for concurrent use.
	OnRead func(name string)
}

// backend is one kind of storage. Names are already checked and relative.
type backend interface {
	open(ctx context.Context, name string) (io.ReadCloser, error)
	// tail reads the last n bytes (all when the file is shorter) and
	// the file's version, in one request.
	tail(ctx context.Context, name string, n int64) ([]byte, Version, error)
	// openRange opens bytes [off, off+n) of version v (any when v.tag
	// is ""); n > 0. Fewer bytes than n is io.ErrUnexpectedEOF.
	openRange(ctx context.Context, name string, off, n int64, v Version) (io.ReadCloser, error)
	put(ctx context.Context, name string, write func(io.Writer) error) error
	exists(ctx context.Context, name string) (bool, error)
	list(ctx context.Context, prefix string) ([]string, error)
	remove(ctx context.Context, name string) error
	close() error
}

// openers maps a URL scheme ("s3", "gs") to its backend; a backend file
// registers itself in init. A location without "scheme://" is local.
var openers = map[string]func(ctx context.Context, rawURL string) (backend, error){}

// IsURL reports whether loc names object storage rather than a local path.
func IsURL(loc string) bool {
	scheme, _, ok := strings.Cut(loc, "://")
	return ok && scheme != "" && scheme != "file"
}

// Open opens the data location loc: a local path (or file:///path), or a
// URL whose scheme has a backend. A local folder is created when missing.
func Open(ctx context.Context, loc string) (*Folder, error) {
	if rest, ok := strings.CutPrefix(loc, "file://"); ok {
		loc = rest
	}
	if IsURL(loc) {
		scheme, rest, _ := strings.Cut(loc, "://")
		loc = scheme + "://" + strings.TrimRight(rest, "/")
	} else if len(loc) > 1 {
		loc = strings.TrimSuffix(loc, "/")
	}
	if !IsURL(loc) {
		if loc == "" {
			return nil, errors.New("objstore: empty location")
		}
		if err := os.MkdirAll(loc, 0o755); err != nil {
			return nil, err
		}
		return &Folder{url: loc, backend: localBackend{dir: loc}}, nil
	}
	scheme, _, _ := strings.Cut(loc, "://")
	opener, ok := openers[scheme]
	if !ok {
		return nil, fmt.Errorf("%s: unknown storage scheme %q (use a local path, s3:// or gs://)", loc, scheme+"://")
	}
	b, err := opener(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return &Folder{url: loc, backend: b}, nil
}

// URL is the location of name in f, for messages and for other processes:
// a local path or a URL.
func (f *Folder) URL(name string) string {
	if name == "" {
		return f.url
	}
	if _, ok := f.backend.(localBackend); ok {
		return filepath.Join(f.url, filepath.FromSlash(name))
	}
	return f.url + "/" + name
}

// Open opens the file name for one sequential read. A missing file's
// error wraps ErrNotExist.
func (f *Folder) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if f.OnRead != nil {
		f.OnRead(name)
	}
	r, err := f.backend.open(ctx, name)
	if err != nil {
		return nil, f.wrap("open", name, err)
	}
	return r, nil
}

// ErrChanged is wrapped by the errors of OpenRange when the file is no
// longer the Version asked for: it was written again since.
// ErrUnreachable is in the error of an operation whose storage service
// did not answer (the network, the endpoint): a failure, not a usage
// mistake, though the URL may be at fault.
var ErrUnreachable = errors.New("storage service unreachable")

// unreachable says msg, and is ErrUnreachable and err for errors.Is.
type unreachable struct {
	msg string
	err error
}

func (u *unreachable) Error() string   { return u.msg }
func (u *unreachable) Unwrap() []error { return []error{ErrUnreachable, u.err} }

var ErrChanged = errors.New("the file changed since its index was read (written again?)")

// Version is one content of a file, as ReadTail found it: its size and
// the storage's tag of that content (an S3 ETag, a GCS generation, a
// local file's modification time). The zero Version is any content.
type Version struct {
	Size int64
	tag  string
}

// Tag is the storage's tag of the version: an S3 ETag (quoted, as S3
// gives it), a GCS generation, a local file's modification time in
// nanoseconds since 1970; "" for the zero Version.
func (v Version) Tag() string { return v.tag }

// localVersion is the version of the local file fi describes.
func localVersion(fi fs.FileInfo) Version {
	return Version{Size: fi.Size(), tag: strconv.FormatInt(fi.ModTime().UnixNano(), 10)}
}

// ReadTail reads the last n bytes of the file name (all of it when it is
// shorter) with one request, and the version read.
func (f *Folder) ReadTail(ctx context.Context, name string, n int64) ([]byte, Version, error) {
	if err := checkName(name); err != nil {
		return nil, Version{}, err
	}
	if f.OnRead != nil {
		f.OnRead(name)
	}
	b, v, err := f.backend.tail(ctx, name, n)
	if err != nil {
		return nil, Version{}, f.wrap("read the end of", name, err)
	}
	return b, v, nil
}

// OpenRange opens the n bytes of the file name from byte off for one
// sequential read, of version v when v is not the zero Version (a file
// replaced since fails with an error wrapping ErrChanged). Its reads end
// with io.EOF after exactly n bytes; a file that ends before is
// io.ErrUnexpectedEOF. A read that breaks on the network goes on from the
// bytes delivered, with a ranged read of the same version. n == 0 makes no
// request. The caller checks what it reads (see the package comment).
func (f *Folder) OpenRange(ctx context.Context, name string, off, n int64, v Version) (io.ReadCloser, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || v.Size > 0 && off+n > v.Size {
		return nil, f.wrap("read", name, fmt.Errorf("bytes %d to %d are beyond the file's %d", off, off+n, v.Size))
	}
	if n == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if f.OnRead != nil {
		f.OnRead(name)
	}
	r, err := f.backend.openRange(ctx, name, off, n, v)
	if err != nil {
		return nil, f.wrap("read", name, err)
	}
	return &namedReader{r: r, f: f, name: name, what: fmt.Sprintf("bytes %d to %d of", off, off+n)}, nil
}

// namedReader names the file and the range in its errors.
type namedReader struct {
	r    io.ReadCloser
	f    *Folder
	name string
	what string
}

func (r *namedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = r.f.wrap("read "+r.what, r.name, err)
	}
	return n, err
}

func (r *namedReader) Close() error { return r.r.Close() }

// Put writes the file name whole: write gets a writer, and the file
// appears under name only when write returned nil and everything reached
// storage. On error nothing under name has changed.
func (f *Folder) Put(ctx context.Context, name string, write func(w io.Writer) error) error {
	if err := checkName(name); err != nil {
		return err
	}
	// An error of write's own (a bad input record, say) is returned as
	// it is; one of storage, or of a write to w, names the file.
	var werr error
	var pw *putWriter
	err := f.backend.put(ctx, name, func(w io.Writer) error {
		pw = &putWriter{w: w}
		werr = write(pw)
		return werr
	})
	if err != nil {
		if werr != nil && err == werr && pw.err == nil {
			return err
		}
		return f.wrap("write", name, err)
	}
	return nil
}

// putWriter remembers whether a write to storage failed.
type putWriter struct {
	w   io.Writer
	err error
}

func (p *putWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n, err
}

// PutBytes is Put of b.
func (f *Folder) PutBytes(ctx context.Context, name string, b []byte) error {
	return f.Put(ctx, name, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// ReadAll reads the whole file name.
func (f *Folder) ReadAll(ctx context.Context, name string) ([]byte, error) {
	r, err := f.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var b []byte
	if st, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		// A local file: read it into a buffer of its size (io.ReadAll's
		// growing copies and clears were a tenth of a staged join task).
		if fi, serr := st.Stat(); serr == nil && fi.Size() > 0 {
			b = make([]byte, 0, fi.Size()+1)
		}
	}
	b, err = readAll(r, b)
	if err != nil {
		return nil, f.wrap("read", name, err)
	}
	return b, nil
}

// readAll appends the rest of r to b (io.ReadAll into b's capacity).
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// Exists reports whether the file name exists.
func (f *Folder) Exists(ctx context.Context, name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	ok, err := f.backend.exists(ctx, name)
	if err != nil {
		return false, f.wrap("stat", name, err)
	}
	return ok, nil
}

// List returns the names of the files whose names start with prefix
// ("" for all), in byte order, recursing into sub-folders. Temporary
// files of unfinished local writes are not listed.
func (f *Folder) List(ctx context.Context, prefix string) ([]string, error) {
	names, err := f.backend.list(ctx, prefix)
	if err != nil {
		return nil, f.wrap("list", prefix, err)
	}
	slices.Sort(names)
	return names, nil
}

// versionLister is a backend whose listing gives each object's version
// (S3: its size and ETag; GCS: its size and generation).
type versionLister interface {
	listVersions(ctx context.Context, prefix string) ([]string, []Version, error)
}

// ListVersions is List with the version of each file as the listing gave
// it, without a request a file: vs[k] is names[k]'s, the zero Version
// where the listing did not say; vs is nil for a storage whose listing
// gives none (a local folder).
func (f *Folder) ListVersions(ctx context.Context, prefix string) (names []string, vs []Version, err error) {
	vl, ok := f.backend.(versionLister)
	if !ok {
		names, err = f.List(ctx, prefix)
		return names, nil, err
	}
	names, vs, err = vl.listVersions(ctx, prefix)
	if err != nil {
		return nil, nil, f.wrap("list", prefix, err)
	}
	order := make([]int, len(names))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	sn, sv := make([]string, len(names)), make([]Version, len(names))
	for k, o := range order {
		sn[k], sv[k] = names[o], vs[o]
	}
	return sn, sv, nil
}

// Delete removes the file name; a missing file is not an error.
func (f *Folder) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := f.backend.remove(ctx, name); err != nil {
		return f.wrap("delete", name, err)
	}
	return nil
}

// Close releases the folder's connections.
func (f *Folder) Close() error { return f.backend.close() }

// wrap makes err name the operation and the file, unless it names them
// already: an error of a Put inside a Put's write, or a local write's
// error (package atomicfile names the file it writes).
func (f *Folder) wrap(op, name string, err error) error {
	var fe *fileError
	if errors.As(err, &fe) {
		return err
	}
	url := f.URL(name)
	if strings.HasPrefix(err.Error(), op+" "+url+": ") {
		return &fileError{err: err}
	}
	return &fileError{msg: op + " " + url + ": ", err: err}
}

// fileError is the error of an operation on a file of a Folder.
type fileError struct {
	msg string // what was done to which file, or "" when err says it
	err error
}

func (e *fileError) Error() string { return e.msg + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }

// checkName refuses names that could leave the folder.
func checkName(name string) error {
	if name == "" || strings.HasPrefix(name, "/") || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "\\") {
		return fmt.Errorf("objstore: bad file name %q", name)
	}
	return nil
}

// localBackend is a folder on a local or shared (NFS, Lustre) file system.
type localBackend struct{ dir string }

func (l localBackend) path(name string) string { return filepath.Join(l.dir, filepath.FromSlash(name)) }

func (l localBackend) open(_ context.Context, name string) (io.ReadCloser, error) {
	return os.Open(l.path(name))
}

func (l localBackend) version(f *os.File) (Version, error) {
	fi, err := f.Stat()
	if err != nil {
		return Version{}, err
	}
	return localVersion(fi), nil
}

func (l localBackend) tail(_ context.Context, name string, n int64) ([]byte, Version, error) {
	f, err := os.Open(l.path(name))
	if err != nil {
		return nil, Version{}, err
	}
	defer f.Close()
	v, err := l.version(f)
	if err != nil {
		return nil, Version{}, err
	}
	n = min(n, v.Size)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, v.Size-n); err != nil {
		return nil, Version{}, err
	}
	return b, v, nil
}

func (l localBackend) openRange(_ context.Context, name string, off, n int64, want Version) (io.ReadCloser, error) {
	f, err := os.Open(l.path(name))
	if err != nil {
		return nil, err
	}
	v, err := l.version(f)
	if err == nil && want.tag != "" && v != want {
		err = ErrChanged
	}
	if err == nil && off+n > v.Size {
		err = fmt.Errorf("bytes %d to %d are beyond its %d: %w", off, off+n, v.Size, io.ErrUnexpectedEOF)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	// A local file that is replaced keeps its open content: the version
	// checked is the one read.
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, off, n), f}, nil
}

func (l localBackend) put(_ context.Context, name string, write func(io.Writer) error) error {
	p := l.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	af, err := atomicfile.Create(p)
	if err != nil {
		return err
	}
	defer af.Abort()
	if err := write(af); err != nil {
		return err
	}
	return af.Commit()
}

func (l localBackend) exists(_ context.Context, name string) (bool, error) {
	_, err := os.Stat(l.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (l localBackend) list(_ context.Context, prefix string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(l.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(l.dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(path.Base(rel), ".") && strings.Contains(path.Base(rel), ".tmp-") {
			return nil // an unfinished atomicfile write
		}
		if strings.HasPrefix(rel, prefix) {
			names = append(names, rel)
		}
		return nil
	})
	return names, err
}

func (l localBackend) remove(_ context.Context, name string) error {
	err := os.Remove(l.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (localBackend) close() error { return nil }

// rangeReader reads bytes [off, off+left) of one version of an object
// with ranged GETs: after a break it asks again from the bytes delivered,
// at most maxAttempts times in a row.
type rangeReader struct {
	ctx       context.Context
	get       func(off, n int64, tag string) (io.ReadCloser, string, error)
	retryable func(error) bool
	off, left int64
	tag       string // the version read ("" until the first answer when any)
	body      io.ReadCloser
	fails     int // breaks since the last byte delivered
}

// start makes the first request; the storage client retried it already.
func (r *rangeReader) start() error {
	body, tag, err := r.get(r.off, r.left, r.tag)
	if err != nil {
		return err
	}
	r.body = body
	if r.tag == "" {
		r.tag = tag
	}
	return nil
}

func (r *rangeReader) Read(p []byte) (int, error) {
	for {
		if r.left == 0 {
			return 0, io.EOF
		}
		if r.body == nil {
			body, _, err := r.get(r.off, r.left, r.tag)
			if err != nil {
				return 0, err
			}
			r.body = body
		}
		n, err := r.body.Read(p[:min(int64(len(p)), r.left)])
		r.off += int64(n)
		r.left -= int64(n)
		if n > 0 {
			r.fails = 0
		}
		if r.left == 0 {
			return n, nil
		}
		if err == nil {
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // the answer ended early
		}
		r.body.Close()
		r.body = nil
		r.fails++
		if r.tag == "" || r.fails >= maxAttempts || !r.retryable(err) {
			return n, err
		}
		if n > 0 {
			return n, nil // resumed at the next Read
		}
		if perr := pause(r.ctx, r.fails); perr != nil {
			return 0, err
		}
	}
}

func (r *rangeReader) Close() error {
	if r.body == nil {
		return nil
	}
	return r.body.Close()
}
