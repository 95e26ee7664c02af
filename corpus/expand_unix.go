//go:build unix

package corpus

import (
	"io/fs"
	"syscall"
)

func idOf(_ string, st fs.FileInfo) fileID {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(s.Dev), ino: uint64(s.Ino)}
	}
	return fileID{}
}
