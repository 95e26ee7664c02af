package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/neardup/neardup/internal/atomicfile"
)

// Files named by a whole URL (s3://bucket/dir/file.jsonl): what the
// commands use for their inputs and outputs, beside the Folder API of
// the staged tasks.

func init() {
	for _, scheme := range []string{"s3", "gs"} {
		atomicfile.RegisterScheme(scheme, func(url string) (atomicfile.Remote, error) {
			return CreateURL(context.Background(), url)
		})
	}
}

// SplitURL splits the URL of one object into the URL of its folder and
// its name in it: s3://b/dir/f.jsonl into s3://b/dir and f.jsonl.
func SplitURL(url string) (folder, name string, err error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok || !IsURL(url) {
		return "", "", fmt.Errorf("%s: not a storage URL", url)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return "", "", fmt.Errorf("%s: want %s://BUCKET/NAME naming one object", url, scheme)
	}
	dir, name := "", key
	if i := strings.LastIndex(key, "/"); i >= 0 {
		dir, name = key[:i], key[i+1:]
	}
	folder = scheme + "://" + bucket
	if dir != "" {
		folder += "/" + dir
	}
	return folder, name, nil
}

// OpenURL opens the object url for one sequential read. The returned
// reader closes the folder with itself; Size(r) is the object's size as
// the answer to the download said it, -1 when it did not (no extra
// request). A missing object's error wraps ErrNotExist.
func OpenURL(ctx context.Context, url string) (io.ReadCloser, error) {
	return openURLWith(ctx, url, func(f *Folder, name string) (io.ReadCloser, error) {
		return f.Open(ctx, name)
	})
}

// OpenURLAt is OpenURL from the byte off of the object on: a request for
// its last byte finds its size and version, then one ranged read of that
// version (an object replaced in between fails with an error wrapping
// ErrChanged); Size(r) is the whole object's. It is how a staged task
// starts reading an input inside it.
func OpenURLAt(ctx context.Context, url string, off int64) (io.ReadCloser, error) {
	return openURLWith(ctx, url, func(f *Folder, name string) (io.ReadCloser, error) {
		_, v, err := f.ReadTail(ctx, name, 1)
		if err != nil {
			return nil, err
		}
		if off < 0 || off > v.Size {
			return nil, fmt.Errorf("%s: byte %d is beyond the object's %d", url, off, v.Size)
		}
		r, err := f.OpenRange(ctx, name, off, v.Size-off, v)
		if err != nil {
			return nil, err
		}
		return sizedReader{r, v}, nil
	})
}

// sizedReader is a ReadCloser of part of an object of size bytes.
type sizedReader struct {
	io.ReadCloser
	v Version
}

func (r sizedReader) objectSize() int64 { return r.v.Size }

func (r sizedReader) objectVersion() Version { return r.v }

// openURLWith opens the folder of the object url and the object with
// open; the returned reader closes the folder with itself.
func openURLWith(ctx context.Context, url string, open func(f *Folder, name string) (io.ReadCloser, error)) (io.ReadCloser, error) {
	dir, name, err := SplitURL(url)
	if err != nil {
		return nil, err
	}
	f, err := Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	r, err := open(f, name)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &folderReader{ReadCloser: r, f: f}, nil
}

type folderReader struct {
	io.ReadCloser
	f *Folder
}

// Size is the size of the object read, -1 when unknown.
func (r *folderReader) Size() int64 { return Size(r.ReadCloser) }

// Size is the size in bytes of what a reader from OpenURL (or
// Folder.Open) reads, as its download's answer said it (a local file's
// as it is now), -1 when unknown.
func Size(r io.Reader) int64 {
	switch r := r.(type) {
	case *folderReader:
		return r.Size()
	case interface{ objectSize() int64 }:
		return r.objectSize()
	case *os.File:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// VersionOf is the version of the object that a reader from OpenURL,
// OpenURLAt (or Folder.Open) reads, as the answer to its download said
// it (a local file's as it is now): its size and the storage's tag of
// its content (Version.Tag). false when the answer did not say.
func VersionOf(r io.Reader) (Version, bool) {
	switch r := r.(type) {
	case *folderReader:
		return VersionOf(r.ReadCloser)
	case interface{ objectVersion() Version }:
		v := r.objectVersion()
		return v, v.tag != ""
	case *os.File:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() {
			return localVersion(fi), true
		}
	}
	return Version{}, false
}

func (r *folderReader) Close() error {
	err := r.ReadCloser.Close()
	if e := r.f.Close(); err == nil {
		err = e
	}
	return err
}

// versionsAtOnce is how many objects Versions asks about at once.
const versionsAtOnce = 16

// Versions returns the version (size and tag) of each object of urls
// (s3:// or gs:// URLs, each naming one object), with one request an
// object (for its last byte, whose answer gives the size and the tag; a
// HEAD for an empty S3 object), up to 16 at once, each folder opened
// once. (A listing would give S3's sizes and ETags without a request an
// object, but the inputs are named one by one as often as by prefix.) A
// missing object's error names it and wraps ErrNotExist.
func Versions(ctx context.Context, urls []string) ([]Version, error) {
	type object struct {
		f    *Folder
		name string
	}
	objects := make([]object, len(urls))
	folders := map[string]*Folder{}
	defer func() {
		for _, f := range folders {
			f.Close()
		}
	}()
	for k, u := range urls {
		dir, name, err := SplitURL(u)
		if err != nil {
			return nil, err
		}
		f := folders[dir]
		if f == nil {
			if f, err = Open(ctx, dir); err != nil {
				return nil, err
			}
			folders[dir] = f
		}
		objects[k] = object{f, name}
	}
	vs := make([]Version, len(urls))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(versionsAtOnce)
	for k, o := range objects {
		g.Go(func() error {
			_, v, err := o.f.ReadTail(gctx, o.name, 1)
			vs[k] = v
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return vs, nil
}

// ExpandVersions lists the objects a URL names: the object itself when
// it exists, else the objects under the prefix url + "/" (at any depth),
// in byte order of their URLs. It is an error, naming the URL, when there
// are none. With them, the version of each object listed under the
// prefix, as the listing gave it (Folder.ListVersions): vs[k] is
// urls[k]'s, the zero Version where not known; vs is nil for an object
// named itself.
func ExpandVersions(ctx context.Context, url string) (urls []string, vs []Version, err error) {
	if dir, name, err := SplitURL(url); err == nil {
		f, err := Open(ctx, dir)
		if err != nil {
			return nil, nil, err
		}
		ok, err := f.Exists(ctx, name)
		f.Close()
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return []string{strings.TrimRight(f.URL(name), "/")}, nil, nil
		}
	}
	f, err := Open(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	names, vs, err := f.ListVersions(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s: %w: no object of that name and none under that prefix", url, ErrNotExist)
	}
	urls = make([]string, len(names))
	for i, n := range names {
		urls[i] = f.URL(n)
	}
	return urls, vs, nil
}

// Writer is an object being uploaded: Commit makes it appear whole, Abort
// (or a failed Commit) leaves nothing. It is what package atomicfile
// writes a URL output through.
type Writer struct {
	url  string
	pw   *io.PipeWriter
	done chan error
	err  error
	end  bool
}

// errAborted is what an upload given up by Abort fails with.
var errAborted = errors.New("objstore: upload aborted")

// CreateURL starts the upload of the object url.
func CreateURL(ctx context.Context, url string) (*Writer, error) {
	dir, name, err := SplitURL(url)
	if err != nil {
		return nil, err
	}
	f, err := Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	w := &Writer{url: url, pw: pw, done: make(chan error, 1)}
	go func() {
		err := f.Put(ctx, name, func(out io.Writer) error {
			_, err := io.Copy(out, pr)
			return err
		})
		if err == nil {
			err = errors.New("objstore: upload ended") // for a writer still writing
			pr.CloseWithError(err)
			err = nil
		} else {
			pr.CloseWithError(err)
		}
		f.Close()
		w.done <- err
	}()
	return w, nil
}

// Write sends p to the upload; after the upload failed it returns its
// error.
func (w *Writer) Write(p []byte) (int, error) { return w.pw.Write(p) }

// Commit ends the upload and returns its error.
func (w *Writer) Commit() error {
	if w.end {
		return w.err
	}
	w.end = true
	w.pw.Close()
	w.err = <-w.done
	return w.err
}

// Abort gives the upload up; nothing appears. It does nothing after
// Commit.
func (w *Writer) Abort() error {
	if w.end {
		return nil
	}
	w.end = true
	w.pw.CloseWithError(errAborted)
	<-w.done
	return nil
}
