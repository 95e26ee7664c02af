package corpus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// compression is the compression of an input or output file.
type compression uint8

const (
	compNone compression = iota
	compGzip
	compZstd
	compSniff // standard input: decided from the first bytes
)

func (c compression) String() string {
	switch c {
	case compGzip:
		return "gzip"
	case compZstd:
		return "zstd"
	}
	return "none"
}

// splitCompression strips a compression suffix (.gz, .zst, .zstd) from a
// lower-case base name.
func splitCompression(base string) (string, compression) {
	switch {
	case strings.HasSuffix(base, ".gz"):
		return strings.TrimSuffix(base, ".gz"), compGzip
	case strings.HasSuffix(base, ".zst"):
		return strings.TrimSuffix(base, ".zst"), compZstd
	case strings.HasSuffix(base, ".zstd"):
		return strings.TrimSuffix(base, ".zstd"), compZstd
	}
	return base, compNone
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// countingReader counts the bytes read from the file and remembers the
// last error of the file itself, so that decoder errors can be told apart
// from I/O errors.
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

// decoder is the decompressed stream of one input file. The decoder is
// created on the first Read, so that a bad header is reported as a read
// error (with the file name and offset) rather than by Open. Its errors wrap
// ErrCorrupt and name the compressed offset reached.
type decoder struct {
	raw    *countingReader
	closer io.Closer
	comp   compression
	r      io.Reader // the decompressed stream, nil until the first Read
	gz     *gzip.Reader
	zd     *zstd.Decoder
	err    error
	// resync: read a seekable gzip file member by member and go on after
	// a damaged member (memberReader).
	resync bool
}

// newDecoder returns the decompressed stream of rc, which it closes on
// Close.
func newDecoder(rc io.ReadCloser, comp compression) *decoder {
	return &decoder{raw: &countingReader{r: rc}, closer: rc, comp: comp}
}

func (d *decoder) init() error {
	src := io.Reader(d.raw)
	comp := d.comp
	if comp == compSniff {
		br := bufio.NewReaderSize(d.raw, 64<<10)
		head, _ := br.Peek(4)
		switch {
		case bytes.HasPrefix(head, gzipMagic):
			comp = compGzip
		case bytes.HasPrefix(head, zstdMagic):
			comp = compZstd
		default:
			comp = compNone
		}
		d.comp = comp
		src = br
	}
	if f, ok := d.closer.(io.ReadSeeker); ok && d.resync && comp == compGzip {
		if _, err := f.Seek(0, io.SeekStart); err != nil { // undo the sniffing
			return err
		}
		d.r = newMemberReader(f)
		return nil
	}
	switch comp {
	case compGzip:
		gz, err := gzip.NewReader(src)
		if err == io.EOF { // an empty file: no documents
			d.r = eofReader{}
			return nil
		}
		if err != nil {
			return d.wrap(err)
		}
		d.gz, d.r = gz, gz
	case compZstd:
		zd, err := zstd.NewReader(src,
			zstd.WithDecoderConcurrency(2), // decodes blocks ahead of the reader
			zstd.WithDecoderMaxWindow(1<<27),
			zstd.WithDecoderMaxMemory(1<<32))
		if err != nil {
			return d.wrap(err)
		}
		d.zd, d.r = zd, zd
	default:
		d.r = src
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// wrap turns a decoder error into one that wraps ErrCorrupt, unless it came
// from the file itself.
func (d *decoder) wrap(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if d.raw.err != nil && errors.Is(err, d.raw.err) {
		return err
	}
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %s stream truncated after %d compressed bytes", ErrCorrupt, d.comp, d.raw.n)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, d.comp.String()) {
		msg = d.comp.String() + ": " + msg
	}
	return fmt.Errorf("%w: %s (within the first %d compressed bytes)", ErrCorrupt, msg, d.raw.n)
}

func (d *decoder) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.r == nil {
		if err := d.init(); err != nil {
			d.err = err
			return 0, err
		}
	}
	n, err := d.r.Read(p)
	if err != nil && !errors.Is(err, errGzipGap) { // after a gap, reading goes on
		if err != io.EOF && !errors.Is(err, ErrCorrupt) {
			err = d.wrap(err)
		}
		d.err = err
	}
	return n, err
}

func (d *decoder) Close() error {
	if d.zd != nil {
		d.zd.Close()
	}
	if d.gz != nil {
		d.gz.Close()
	}
	return d.closer.Close()
}

// CompressionRatio estimates how many times larger the file at path is
// once decompressed (1 for a file that is not gzip or zstd), from its
// first 4 MiB.
func CompressionRatio(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	const sample = 4 << 20
	d := newDecoder(io.NopCloser(io.LimitReader(f, sample)), compSniff)
	n, _ := io.Copy(io.Discard, io.LimitReader(d, 256*sample)) // a cut stream ends in an error: fine
	if d.comp == compNone || d.raw.n == 0 || n == 0 {
		return 1, nil
	}
	return float64(n) / float64(d.raw.n), nil
}
