package corpus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/neardup/neardup/internal/objstore"
)

// ExpandOptions configures ExpandWith. The zero value lists every
// supported file.
type ExpandOptions struct {
	// Exclude holds glob patterns (path.Match syntax). A file or
	// directory met while walking an input directory is left out when a
	// pattern matches its path relative to that directory (with forward
	// slashes, e.g. "raw/*.jsonl") or its base name (e.g. "*.meta.jsonl").
	// Inputs named on their own are never excluded.
	Exclude []string
}

// Skip is a path found while walking a directory that is not read.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Reasons for a Skip.
const (
	SkipUnsupported = "unsupported format"
	SkipSameFile    = "same file as another input"
	SkipLoop        = "directory already walked (a symbolic link loop)"
)

// Expansion is the list of input files and what was left out.
type Expansion struct {
	// Files are the files to read, in order.
	Files []string
	// Skipped are the paths met while walking directories that are not
	// read, in sorted order: files no reader takes by their name, second
	// paths (through symbolic links) to a file already listed, and
	// directories already walked.
	Skipped []Skip
	// Excluded counts the files and directories left out by
	// ExpandOptions.Exclude.
	Excluded int
	// Versions are the versions of the objects listed under a prefix
	// (s3://bucket/dir), as the listing gave them (an S3 object's size
	// and ETag, a GCS object's size and generation), by URL: a staged
	// job's plan takes them instead of asking each object. An object
	// named itself, or one whose listing did not say, has none.
	Versions map[string]Version
}

// Expand turns the inputs into a list of files as ExpandWith does with
// no options, without saying what it left out.
func Expand(inputs []string) ([]string, error) {
	e, err := ExpandWith(inputs, ExpandOptions{})
	if err != nil {
		return nil, err
	}
	return e.Files, nil
}

// ExpandWith turns the inputs into a list of files: a directory is walked
// and the files in it (at any depth) whose names a reader takes are
// listed in sorted order; other inputs, including "-", are kept as given.
// Symbolic links are followed, to files and to directories: a directory
// is walked once however many links lead to it (which also stops loops),
// and a file reached by several paths is listed once, under the first
// path in sorted order. A broken symbolic link whose name a reader would
// take is an error naming it; one with another name is skipped as
// unsupported. A pattern of opts.Exclude that is not a valid glob is an
// error.
func ExpandWith(inputs []string, opts ExpandOptions) (*Expansion, error) {
	for _, p := range opts.Exclude {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--exclude %q: %w", p, err)
		}
	}
	e := &Expansion{}
	w := walker{opts: opts, dirs: map[fileID]bool{}, exp: e}
	seen := map[fileID]string{} // files found in the directories, over all inputs
	for _, in := range inputs {
		if in == "-" {
			e.Files = append(e.Files, in)
			continue
		}
		if objstore.IsURL(in) {
			if err := w.expandURL(in); err != nil {
				return nil, err
			}
			continue
		}
		st, err := os.Stat(in)
		if err != nil {
			return nil, brokenLink(in, err)
		}
		if !st.IsDir() {
			e.Files = append(e.Files, in)
			continue
		}
		w.found, w.root = nil, in
		if err := w.walk(in, st); err != nil {
			return nil, err
		}
		slices.SortFunc(w.found, func(a, b found) int { return strings.Compare(a.path, b.path) })
		for _, f := range w.found {
			if first, ok := seen[f.id]; ok && f.id != (fileID{}) {
				e.Skipped = append(e.Skipped, Skip{Path: f.path, Reason: SkipSameFile + " (" + first + ")"})
				continue
			}
			seen[f.id] = f.path
			e.Files = append(e.Files, f.path)
		}
	}
	slices.SortStableFunc(e.Skipped, func(a, b Skip) int { return strings.Compare(a.Path, b.Path) })
	return e, nil
}

// brokenLink returns err, the error of os.Stat(in), naming the link and
// its target when in is a symbolic link to nothing ("x.jsonl is a
// symbolic link to missing/y.jsonl, which does not exist"); the error
// still wraps fs.ErrNotExist.
func brokenLink(in string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if lst, lerr := os.Lstat(in); lerr != nil || lst.Mode()&fs.ModeSymlink == 0 {
		return err
	}
	dest, rerr := os.Readlink(in)
	if rerr != nil {
		return err
	}
	return &brokenLinkError{link: in, dest: dest}
}

// brokenLinkError is a symbolic link to nothing given as an input.
type brokenLinkError struct{ link, dest string }

func (e *brokenLinkError) Error() string {
	return fmt.Sprintf("%s is a symbolic link to %s, which does not exist", e.link, e.dest)
}

// Unwrap returns fs.ErrNotExist.
func (e *brokenLinkError) Unwrap() error { return fs.ErrNotExist }

// fileID identifies a file or directory whatever the path to it: its
// device and inode numbers where the system has them (idOf in
// expand_unix.go), else its path with every link resolved.
type fileID struct {
	dev, ino uint64
	//lint:ignore U1000 set by idOf where the system has no inode numbers (expand_other.go)
	path string
}

type found struct {
	path string
	id   fileID
}

type walker struct {
	opts  ExpandOptions
	dirs  map[fileID]bool // directories walked, over all inputs
	root  string
	found []found
	exp   *Expansion
}

// excluded reports whether p, met under w.root, matches a pattern.
func (w *walker) excluded(p string) bool {
	rel, err := filepath.Rel(w.root, p)
	if err != nil {
		rel = p
	}
	return w.excludedRel(filepath.ToSlash(rel))
}

// excludedRel reports whether the slash-separated path rel, relative to
// an input folder or prefix, or its base name matches a pattern.
func (w *walker) excludedRel(rel string) bool {
	// A folder of a prefix is left out with everything in it, as a
	// directory is when walking.
	for i := strings.IndexByte(rel, '/'); i >= 0; i = next(rel, i) {
		if w.matches(rel[:i], path.Base(rel[:i])) {
			return true
		}
	}
	return w.matches(rel, path.Base(rel))
}

func next(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// matches reports whether a pattern matches rel or base.
func (w *walker) matches(rel, base string) bool {
	for _, pat := range w.opts.Exclude {
		if ok, _ := path.Match(pat, rel); ok {
			return true
		}
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	return false
}

// expandURL lists what an object-storage URL names: the object itself,
// or the objects under the prefix URL/ whose names a reader takes, in
// byte order, as a local directory is walked.
func (w *walker) expandURL(in string) error {
	urls, vs, err := objstore.ExpandVersions(context.Background(), in)
	if err != nil {
		return err
	}
	if len(urls) == 1 && urls[0] == strings.TrimRight(in, "/") {
		w.exp.Files = append(w.exp.Files, urls[0])
		return nil
	}
	root := strings.TrimRight(in, "/") + "/"
	for i, u := range urls {
		rel := strings.TrimPrefix(u, root)
		if w.excludedRel(rel) {
			w.exp.Excluded++
			continue
		}
		if !Supported(u) {
			w.exp.Skipped = append(w.exp.Skipped, Skip{Path: u, Reason: SkipUnsupported})
			continue
		}
		w.exp.Files = append(w.exp.Files, u)
		if vs != nil && vs[i].Tag() != "" {
			if w.exp.Versions == nil {
				w.exp.Versions = map[string]Version{}
			}
			w.exp.Versions[u] = Version{Size: vs[i].Size, Tag: vs[i].Tag()}
		}
	}
	return nil
}

// walk lists the files under dir, whose (followed) FileInfo is st.
func (w *walker) walk(dir string, st fs.FileInfo) error {
	id := idOf(dir, st)
	if id != (fileID{}) {
		if w.dirs[id] {
			w.exp.Skipped = append(w.exp.Skipped, Skip{Path: dir, Reason: SkipLoop})
			return nil
		}
		w.dirs[id] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, ent := range entries {
		p := filepath.Join(dir, ent.Name())
		if w.excluded(p) {
			w.exp.Excluded++
			continue
		}
		info, err := ent.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Stat(p) // follows the link
			if err != nil {
				if !Supported(p) {
					w.exp.Skipped = append(w.exp.Skipped, Skip{Path: p, Reason: SkipUnsupported})
					continue
				}
				// Worded as a broken link given directly is
				// ("p is a symbolic link to dest, which does not
				// exist"), with the flag that leaves it out.
				if bl := brokenLink(p, err); bl != err {
					return fmt.Errorf("%w (use --exclude to leave it out)", bl)
				}
				dest, _ := os.Readlink(p)
				return fmt.Errorf("%s: symbolic link to %s: %w (use --exclude to leave it out)", p, dest, errors.Unwrap(err))
			}
			info = target
		}
		switch {
		case info.IsDir():
			if err := w.walk(p, info); err != nil {
				return err
			}
		case !info.Mode().IsRegular(): // pipes, devices, sockets
			w.exp.Skipped = append(w.exp.Skipped, Skip{Path: p, Reason: SkipUnsupported})
		case Supported(p):
			w.found = append(w.found, found{path: p, id: idOf(p, info)})
		default:
			w.exp.Skipped = append(w.exp.Skipped, Skip{Path: p, Reason: SkipUnsupported})
		}
	}
	return nil
}
