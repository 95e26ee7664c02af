package corpus

import (
	"encoding/binary"
	"io"
	"os"
)

// GzipSize estimates the decompressed size of the gzip file at path from
// its trailer, reading its first 4 MiB and its last 4 bytes. A gzip
// member ends with ISIZE, its decompressed size modulo 2^32; a file of
// several members (concatenated files, bgzip's blocks, a web archive's
// records) states there its last member's size only, and telling one
// member from many takes reading the whole file. The rule:
//
//   - The first member is decoded within the first 4 MiB (and the first
//     1 GiB it decompresses to, which counts as the head's end). When it
//     ends there, the answer is exact: its size when nothing follows, and
//     ok is false when another member follows (a file of many members).
//   - Otherwise ISIZE is a lower bound of the size (a last member, a
//     size modulo 2^32), and is taken when it agrees with what is known:
//     the file is less than 4 GiB compressed (beyond, its size is surely
//     past 2^32 and ISIZE is that modulo 2^32); ISIZE is at least 99% of
//     the compressed size (deflate's stored blocks add 5 bytes every
//     64 KiB: a shorter last member means many members); and ISIZE is at
//     least the size the head's ratio gives (a bound above the estimate
//     is the better estimate) and at most 8 times it (the last 4 bytes of
//     a file cut short are not a trailer: they pass only by chance), or
//     at least 95% of it when that is below 2^32 (ISIZE has not wrapped
//     then; the head's ratio was 0.7 to 1.8% above the size on the gzip
//     corpora of /work/shared/data, whose ISIZE is exact). Below 95%,
//     the file may be of several large members, which ISIZE states by
//     its last one: two equal members would be estimated at half their
//     size. The head's estimate, the larger, is kept then: a file of
//     several members is estimated at no less than 95% of it, and a
//     file of one member whose head compresses better than the rest is
//     over-estimated, the safe side for a memory plan.
//
// ok is false for a file that is not gzip or fails these checks: the
// caller keeps headRatio, the head's compression ratio, the number
// CompressionRatio gives, measured by the same decoding. The head's
// ratio alone is off by 2 to 4% on the gzip corpora of /work/shared/data
// (html-pages: 5.83 against 6.04), and by as much as the head differs
// from the rest of the file in general. headRatio is 0 when the file
// cannot be opened.
func GzipSize(path string) (size int64, headRatio float64, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	h := readHead(io.LimitReader(f, headBytes))
	headRatio = h.ratio()
	st, err := f.Stat()
	if err != nil || st.Size() < 18 || h.comp != compGzip {
		return 0, headRatio, false
	}
	c := st.Size()
	if h.firstEnd.at > 0 { // the first member ended within the head
		if h.firstEnd.at == c {
			return h.firstEnd.out, headRatio, true
		}
		return 0, headRatio, false // more members follow
	}
	cut := h.n == maxHeadDecoded || h.truncated && h.off >= headBytes
	if !cut || h.n == 0 {
		return 0, headRatio, false // damaged, not cut by the head
	}
	var b [4]byte
	if _, err := f.ReadAt(b[:], c-4); err != nil {
		return 0, headRatio, false
	}
	isize := int64(binary.LittleEndian.Uint32(b[:]))
	byHead := headRatio * float64(c)
	switch {
	case c >= 1<<32 || isize < c-c/100 || float64(isize) > byHead*8:
		return 0, headRatio, false
	case float64(isize) >= byHead:
		return isize, headRatio, true
	case float64(isize) < byHead*minISizeOfHead || byHead >= 1<<32:
		return 0, headRatio, false
	}
	return isize, headRatio, true
}

// minISizeOfHead is the least fraction of the head's estimate that a
// trailer's ISIZE below it must reach to be taken (GzipSize).
const minISizeOfHead = 0.95
