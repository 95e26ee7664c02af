package staged

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"

	"github.com/neardup/neardup/internal/objstore"
)

// A pack is the one object a producing task writes for a stage's
// exchange, holding every consuming task's section, so that the work
// folder holds O(N) objects a stage, not N x N (sign/i/buckets[.R],
// scatter/i, join/g/shards). Its layout (pack version 1; all integers
// little-endian):
//
//	section 0 | section 1 | ... | section n-1 | index
//	index:   n entries of 12 bytes: the section's length (uint64) and its
//	         CRC32C (Castagnoli; uint32)
//	trailer: n (uint32), the CRC32C of the entries and of n (uint32), the
//	         version (uint32, 1), the magic "NDPK" (4 bytes)
//
// A section starts where the one before it ends. The index is a footer
// because the producer learns the sections' lengths as it writes them
// (a sign task's runs and a scatter task's spilled segments stream to
// storage; nothing is held to be measured first), and the object appears
// whole or not at all (objstore.Folder.Put), index included: there is no
// second object to keep in step with it. A consumer knows n (from the
// plan), so it reads the whole index with one ranged read of the last
// 12n+16 bytes (objstore.Folder.ReadTail), checks it (magic, version, n,
// CRC32C, lengths adding up to the object's size), then reads its own
// section with one ranged read of that version of the object
// (objstore.Folder.OpenRange: an object written again in between is an
// error, not a mix of two), checking the section's CRC32C at its end.
// An empty section costs no request.

const (
	packVersion    = 1
	packMagic      = "NDPK"
	packEntrySize  = 12
	packTrailerLen = 16
)

// packIndexSize is the index and trailer of a pack of n sections.
func packIndexSize(n int) int64 { return int64(n)*packEntrySize + packTrailerLen }

// packWriter writes a pack's sections in order, then its index.
type packWriter struct {
	w    io.Writer
	lens []uint64
	crcs []uint32
	cur  int
}

func newPackWriter(w io.Writer, n int) *packWriter {
	return &packWriter{w: w, lens: make([]uint64, n), crcs: make([]uint32, n)}
}

// section makes the writes that follow section k's (k at least the
// current one; the sections skipped are empty).
func (p *packWriter) section(k int) {
	if k < p.cur || k >= len(p.lens) {
		panic(fmt.Sprintf("staged: pack section %d after %d of %d", k, p.cur, len(p.lens)))
	}
	p.cur = k
}

func (p *packWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.lens[p.cur] += uint64(n)
	p.crcs[p.cur] = crc32.Update(p.crcs[p.cur], castagnoli, b[:n])
	return n, err
}

// finish writes the index.
func (p *packWriter) finish() error {
	b := make([]byte, 0, packIndexSize(len(p.lens)))
	for k, n := range p.lens {
		b = binary.LittleEndian.AppendUint64(b, n)
		b = binary.LittleEndian.AppendUint32(b, p.crcs[k])
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p.lens)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	b = binary.LittleEndian.AppendUint32(b, packVersion)
	b = append(b, packMagic...)
	_, err := p.w.Write(b)
	return err
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// packIndex is what a consumer keeps of a pack's index: the version read
// and its sections first to first+len(secs)-1.
type packIndex struct {
	name  string // in the work folder
	n     int    // sections
	ver   objstore.Version
	first int
	secs  []packSection
}

type packSection struct {
	off, n int64
	crc    uint32
}

// readPack reads the index of the pack name of n sections and keeps
// sections first to first+k-1 (a task reads the same ones of a pack
// however often it opens them: the index is read once).
func (j *Job) readPack(ctx context.Context, name string, n, first, k int) (*packIndex, error) {
	key := fmt.Sprintf("%s#%d#%d", name, first, k)
	if px, ok := j.packs[key]; ok {
		return px, nil
	}
	b, ver, err := j.Work.ReadTail(ctx, name, packIndexSize(n))
	if err != nil {
		return nil, err
	}
	px, err := j.parsePack(name, b, ver, n, first, k)
	if err != nil {
		return nil, err
	}
	if j.packs == nil {
		j.packs = map[string]*packIndex{}
	}
	j.packs[key] = px
	return px, nil
}

// parsePack checks b, the index of the pack name of n sections as read
// (version ver), and keeps sections first to first+k-1. It keeps
// nothing in j: it is safe for concurrent use.
func (j *Job) parsePack(name string, b []byte, ver objstore.Version, n, first, k int) (*packIndex, error) {
	secs, err := parsePackIndex(b, ver.Size, n, first, k)
	if err != nil {
		var v *packVersionError
		if errors.As(err, &v) {
			return nil, fmt.Errorf("%s: %w", j.Work.URL(name), err)
		}
		return nil, fmt.Errorf("%s: damaged work file: %w (a pack of %d sections, %d bytes, ends with %d bytes of index)", j.Work.URL(name), err, n, ver.Size, packIndexSize(n))
	}
	return &packIndex{name: name, n: n, ver: ver, first: first, secs: secs}, nil
}

// packVersionError is a pack of another version than packVersion.
type packVersionError struct{ v uint32 }

func (e *packVersionError) Error() string {
	return fmt.Sprintf("pack version %d, this neardup reads %d", e.v, packVersion)
}

// parsePackIndex checks the index b, the last bytes of a pack of size
// bytes and n sections, and returns sections first to first+k-1. Every
// section it returns lies within the sections' bytes, after the one
// before it.
func parsePackIndex(b []byte, size int64, n, first, k int) ([]packSection, error) {
	isize := packIndexSize(n)
	if int64(len(b)) < packTrailerLen {
		return nil, fmt.Errorf("%d bytes, shorter than a pack's trailer", len(b))
	}
	t := b[len(b)-packTrailerLen:]
	if string(t[12:]) != packMagic {
		return nil, errors.New("no pack trailer (cut short, or not a pack)")
	}
	if v := binary.LittleEndian.Uint32(t[8:]); v != packVersion {
		return nil, &packVersionError{v}
	}
	if c := binary.LittleEndian.Uint32(t); int64(c) != int64(n) {
		return nil, fmt.Errorf("its index has %d sections", c)
	}
	if int64(len(b)) != isize || size < isize {
		return nil, fmt.Errorf("%d bytes, shorter than its index", min(int64(len(b)), size))
	}
	if crc32.Checksum(b[:len(b)-12], castagnoli) != binary.LittleEndian.Uint32(t[4:]) {
		return nil, errors.New("the index's CRC32C does not match")
	}
	end := size - isize // where the sections end
	var secs []packSection
	var off int64
	for x := range n {
		e := b[x*packEntrySize:]
		l := binary.LittleEndian.Uint64(e)
		if l > uint64(end-off) {
			return nil, fmt.Errorf("section %d of %d bytes at byte %d is beyond the sections' end", x, l, off)
		}
		if x >= first && x < first+k {
			secs = append(secs, packSection{off: off, n: int64(l), crc: binary.LittleEndian.Uint32(e[8:])})
		}
		off += int64(l)
	}
	if off != end {
		return nil, fmt.Errorf("its sections end at byte %d, its index begins at %d", off, end)
	}
	return secs, nil
}

// openSection opens section x of px for one sequential read through a
// buffer of bufSize bytes; its CRC32C is checked at its end. An empty
// section makes no request.
func (j *Job) openSection(ctx context.Context, px *packIndex, x, bufSize int) (*reader, error) {
	sec := px.secs[x-px.first]
	name := fmt.Sprintf("%s (section %d of %d)", j.Work.URL(px.name), x, px.n)
	if sec.n == 0 {
		return &reader{Reader: bufio.NewReaderSize(strings.NewReader(""), 16), c: io.NopCloser(nil), name: name}, nil
	}
	rc, err := j.Work.OpenRange(ctx, px.name, sec.off, sec.n, px.ver)
	if err != nil {
		return nil, err
	}
	cr := &crcReader{r: rc, want: sec.crc}
	return &reader{Reader: bufio.NewReaderSize(cr, bufSize), c: rc, name: name}, nil
}

// crcReader checks the CRC32C of what it read at its end.
type crcReader struct {
	r    io.Reader
	crc  uint32
	want uint32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	if err == io.EOF && c.crc != c.want {
		return n, fmt.Errorf("the section's CRC32C is %08x, its index says %08x", c.crc, c.want)
	}
	return n, err
}
