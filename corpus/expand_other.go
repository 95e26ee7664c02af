//go:build !unix

package corpus

import (
	"io/fs"
	"path/filepath"
)

// idOf resolves every link of the path: without inode numbers, two paths
// of one file or directory agree only after that.
func idOf(path string, _ fs.FileInfo) fileID {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileID{}
	}
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return fileID{path: p}
}
