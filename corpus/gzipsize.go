package corpus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// GzipSize estimates the decompressed size of the gzip file at path from
// its trailer, reading its first 4 MiB and its last 4 bytes. A gzip
// member ends with ISIZE, its decompressed size modulo 2^32; a file of
// several members (concatenated files, bgzip's blocks, a web archive's
// records) states there its last member's size only, and telling one
// member from many takes reading the whole file. The rule:
//
//   - The first member is decoded within the first 4 MiB (as
//     CompressionRatio decodes them). When it ends there, the answer is
//     exact: its size when nothing follows, and ok is false when another
//     member follows (a file of many members).
//   - Otherwise ISIZE is a lower bound of the size (a last member, a
//     size modulo 2^32), and is taken when it agrees with what is known:
//     the file is less than 4 GiB compressed (beyond, its size is surely
//     past 2^32 and ISIZE is that modulo 2^32); ISIZE is at least 99% of
//     the compressed size (deflate's stored blocks add 5 bytes every
//     64 KiB: a shorter last member means many members); and ISIZE is at
//     least the size the head's ratio gives (a bound above the estimate
//     is the better estimate) and at most 8 times it (the last 4 bytes of
//     a file cut short are not a trailer: they pass only by chance), or
//     at least half of it when that is below 2^32 (ISIZE has not wrapped
//     then, but a file of two or more large members can pass, estimated
//     by its last member: up to half its size).
//
// ok is false for a file that is not gzip or fails these checks: the
// caller keeps the head's compression ratio (CompressionRatio). The
// head's ratio alone is off by 2 to 4% on the gzip corpora of
// /work/shared/data (html-pages: 5.83 against 6.04), and by as much as
// the head differs from the rest of the file in general.
func GzipSize(path string) (size int64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() < 18 {
		return 0, false
	}
	c := st.Size()
	head := &countedBytes{br: bufio.NewReader(io.LimitReader(f, gzipHeadBytes))}
	zr, err := gzip.NewReader(head)
	if err != nil {
		return 0, false
	}
	zr.Multistream(false)
	n, err := io.Copy(io.Discard, zr)
	if err == nil { // the first member ended within the head
		if head.off == c {
			return n, true
		}
		return 0, false // more members follow
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || head.off < gzipHeadBytes || n == 0 {
		return 0, false // damaged, not cut by the head
	}
	var b [4]byte
	if _, err := f.ReadAt(b[:], c-4); err != nil {
		return 0, false
	}
	isize := int64(binary.LittleEndian.Uint32(b[:]))
	byHead := float64(n) / float64(head.off) * float64(c)
	switch {
	case c >= 1<<32 || isize < c-c/100 || float64(isize) > byHead*8:
		return 0, false
	case float64(isize) >= byHead:
		return isize, true
	case float64(isize) < byHead/2 || byHead >= 1<<32:
		return 0, false
	}
	return isize, true
}

// gzipHeadBytes is the start of a file that GzipSize decodes (the same
// as CompressionRatio's).
const gzipHeadBytes = 4 << 20
