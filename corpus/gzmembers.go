package corpus

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// errGzipGap marks a decompression error after which a memberReader stream
// goes on from the next gzip member: the data of the damaged member from
// the error on is lost, the rest of the file is not. Web archives compress
// every record as its own member, so a reader that sees this error can
// skip to the next record.
var errGzipGap = errors.New("skipped to the next gzip member")

// memberReader decompresses a seekable gzip file one member at a time, as
// the multistream gzip reader does, and resynchronises after a damaged
// member: it returns the error once (wrapping ErrCorrupt and errGzipGap,
// with the member's compressed offset), then scans forward from the byte
// after the member's start for the next valid gzip member header and goes
// on from there.
type memberReader struct {
	file  io.ReadSeeker
	in    countedBytes
	gz    *gzip.Reader
	start int64 // compressed offset of the current member
	lost  bool  // the current member is damaged: scan for the next
	eof   bool
	err   error // sticky: a read error of the file itself
	size  int64 // of the file, -1 when unknown
}

// countedBytes is a buffered reader that counts the bytes consumed from
// it. It is a flate.Reader, so the gzip reader consumes exactly the bytes
// of each member and no more.
type countedBytes struct {
	br  *bufio.Reader
	off int64 // compressed offset of the next byte
}

func (c *countedBytes) Read(p []byte) (int, error) {
	n, err := c.br.Read(p)
	c.off += int64(n)
	return n, err
}

func (c *countedBytes) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.off++
	}
	return b, err
}

// seek moves to the compressed offset off.
func (c *countedBytes) seek(file io.ReadSeeker, off int64) error {
	if _, err := file.Seek(off, io.SeekStart); err != nil {
		return err
	}
	c.br.Reset(file)
	c.off = off
	return nil
}

func newMemberReader(file io.ReadSeeker, size int64) *memberReader {
	return &memberReader{file: file, in: countedBytes{br: bufio.NewReaderSize(file, 64<<10)}, size: size}
}

// open reads the header of the member at the current offset.
func (g *memberReader) open() error {
	g.start = g.in.off
	var err error
	if g.gz == nil {
		g.gz, err = gzip.NewReader(&g.in)
	} else {
		err = g.gz.Reset(&g.in)
	}
	if err == nil {
		g.gz.Multistream(false)
	}
	return err
}

func (g *memberReader) Read(p []byte) (int, error) {
	for {
		switch {
		case g.err != nil:
			return 0, g.err
		case g.eof:
			return 0, io.EOF
		case g.lost:
			if err := g.next(); err != nil {
				return 0, err
			}
			continue
		case g.gz == nil:
			if err := g.open(); err != nil {
				return 0, g.fail(err)
			}
		}
		n, err := g.gz.Read(p)
		if err == io.EOF { // the member ends; is there another?
			if err = g.open(); err == io.EOF {
				g.eof = true
				err = nil
			}
		}
		if err != nil {
			return n, g.fail(err)
		}
		if n > 0 || g.eof {
			return n, nil
		}
	}
}

// fail reports the damage of the current member and arranges to resume
// at the next one.
func (g *memberReader) fail(err error) error {
	e := &StreamError{Compression: "gzip", Offset: g.in.off, Size: g.size}
	if err == io.ErrUnexpectedEOF {
		g.eof = true // a truncated last member: nothing follows
		e.Reason = fmt.Sprintf("stream truncated in the member that starts at compressed offset %d", g.start)
		return e
	}
	g.lost = true
	e.Resumes = true
	e.Reason = fmt.Sprintf("%s in the member that starts at compressed offset %d", strings.TrimPrefix(err.Error(), "gzip: "), g.start)
	return fmt.Errorf("%w; %w", e, errGzipGap)
}

// next scans for the next valid member header after the start of the
// damaged member. A header found inside compressed data by chance is
// possible; its member then fails too and the scan goes on after it.
func (g *memberReader) next() error {
	from := g.start + 1
	for {
		if err := g.in.seek(g.file, from); err != nil {
			g.err = err
			return err
		}
		// Find the magic bytes 1f 8b and the deflate method 08.
		var w [3]byte
		for i := 0; i < 3 || w != [3]byte{0x1f, 0x8b, 8}; i++ {
			b, err := g.in.ReadByte()
			if err == io.EOF {
				g.eof, g.lost = true, false
				return nil
			}
			if err != nil {
				g.err = err
				return err
			}
			w[0], w[1], w[2] = w[1], w[2], b
		}
		at := g.in.off - 3
		if err := g.in.seek(g.file, at); err != nil {
			g.err = err
			return err
		}
		if err := g.open(); err == nil {
			g.lost = false
			return nil
		}
		from = at + 1
	}
}
