package corpus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

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

// StreamError is damage to the stream of an input file: a gzip or zstd
// stream that does not decompress, fails its checksum or ends too soon. It
// wraps ErrCorrupt. A reader reports it inside a *RecordError that names
// the file and the line or record reached.
type StreamError struct {
	// Compression is "gzip" or "zstd".
	Compression string
	// Offset is the byte offset in the file where reading stopped. gzip
	// offsets are exact. zstd decodes blocks ahead of its reader on a
	// goroutine of its own, so how far it had read when the damage
	// surfaced varies from run to run: a zstd offset is the start of the
	// frame in which the damage was found, the end of the stream decoded
	// whole, the same on every run.
	Offset int64
	// Size is the size of the file, -1 when unknown (standard input).
	Size int64
	// Reason says what was wrong.
	Reason string
	// Resumes is true when reading goes on at the next gzip member (a
	// web archive with a member per record): only the damaged member's
	// data from Offset on is lost.
	Resumes bool
	// notCompressed: the file is not of the compression its name says
	// (Reason says what it looks like instead).
	notCompressed bool
	// truncated: the stream ended inside a member or frame (Reason says
	// "stream truncated").
	truncated bool
}

func (e *StreamError) Error() string {
	var b strings.Builder
	if e.notCompressed {
		return e.Reason
	}
	if e.Resumes {
		fmt.Fprintf(&b, "%s: %s, found at compressed offset %d; reading goes on at the next member", e.Compression, e.Reason, e.Offset)
		return b.String()
	}
	if e.Compression == "zstd" {
		fmt.Fprintf(&b, "zstd: %s in the frame that starts at compressed offset %d", e.Reason, e.Offset)
		if e.Size >= 0 {
			fmt.Fprintf(&b, " of %d", e.Size)
		}
		b.WriteString("; reading stopped in that frame")
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %s; reading stopped at compressed offset %d", e.Compression, e.Reason, e.Offset)
	if n := e.Unread(); n >= 0 {
		fmt.Fprintf(&b, " of %d (%d bytes unread)", e.Size, n)
	}
	return b.String()
}

// Unwrap returns ErrCorrupt.
func (e *StreamError) Unwrap() error { return ErrCorrupt }

// Unread is how many bytes of the file were never read (for zstd, from
// the start of the damaged frame on), -1 when the size is unknown or
// reading resumed.
func (e *StreamError) Unread() int64 {
	if e.Size < 0 || e.Resumes {
		return -1
	}
	return max(e.Size-e.Offset, 0)
}

// maxVerifyAhead bounds how far a decoder decompresses ahead of its reader
// to check a stream's integrity before a bad record is reported (verify).
const maxVerifyAhead = 32 << 20

// decoder is the decompressed stream of one input file. The decoder is
// created on the first Read, so that a bad header is reported as a read
// error (with the file name and offset) rather than by Open. Its errors
// are *StreamError (wrapping ErrCorrupt) unless they come from the file
// itself.
type decoder struct {
	raw    *countingReader
	br     *bufio.Reader // over raw; the gzip reader reads single bytes from it
	closer io.Closer
	comp   compression
	size   int64 // of the file, -1 when unknown
	// version is the file's as it was opened (InputVersion), the zero
	// Version when not known.
	version Version
	r       io.Reader // the decompressed stream, nil until the first Read
	gz      *gzip.Reader
	zd      *zstd.Decoder
	frames  *zstdFrameReader // zd's input: one frame at a time
	// zstdConcurrency is zd's WithDecoderConcurrency: 2 decodes blocks
	// ahead of the reader; tests set 1 to check that the errors are the
	// same.
	zstdConcurrency int
	err             error
	// ahead holds data decompressed by verify and not yet read; aheadErr
	// is the error (io.EOF at the end) that followed it.
	ahead    bytes.Buffer
	aheadErr error
	// resync: read a seekable gzip file member by member and go on after
	// a damaged member (memberReader).
	resync bool
	// out is the decompressed offset of the next byte read (from the
	// stream's start, also when reading began at a Position); marks are
	// the gzip members and zstd frames met so far, the latest last (see
	// markAt).
	out   int64
	marks []streamMark
	// firstEnd is where the first gzip member ended: at, the offset of
	// what follows it, out, its decompressed size; at is 0 until it has
	// (a member takes at least 18 bytes). GzipSize reads it.
	firstEnd streamMark
}

// streamMark is where a gzip member or zstd frame starts: at, its byte
// offset in the file, out, the decompressed offset of its first byte.
type streamMark struct{ at, out int64 }

// maxMarks bounds the marks a decoder keeps: markAt's callers ask about
// offsets a little behind the decoder (its reader's buffer, the data
// verified ahead), so older ones are dropped, half at a time.
const maxMarks = 4096

// mark records that a member or frame starts at the file offset at, its
// first byte at the decompressed offset out.
func (d *decoder) mark(at, out int64) {
	if n := len(d.marks); n > 0 && d.marks[n-1].out == out {
		d.marks[n-1].at = at // the one before decompressed to nothing
		return
	}
	if len(d.marks) == maxMarks {
		d.marks = append(d.marks[:0], d.marks[maxMarks/2:]...)
	}
	d.marks = append(d.marks, streamMark{at: at, out: out})
}

// markAt returns the last member or frame that starts at or before the
// decompressed offset off, and forgets those before it (later questions
// ask about later offsets); false when it is not known.
func (d *decoder) markAt(off int64) (streamMark, bool) {
	k := len(d.marks) - 1
	for k >= 0 && d.marks[k].out > off {
		k--
	}
	if k < 0 {
		return streamMark{}, false
	}
	d.marks = d.marks[k:]
	return d.marks[0], true
}

// newDecoder returns the decompressed stream of rc, which it closes on
// Close.
func newDecoder(rc io.ReadCloser, comp compression) *decoder {
	return &decoder{raw: &countingReader{r: rc}, closer: rc, comp: comp, size: -1, zstdConcurrency: 2}
}

func (d *decoder) init() error {
	d.br = bufio.NewReaderSize(d.raw, 64<<10)
	comp := d.comp
	if comp == compSniff {
		head, _ := d.br.Peek(4)
		switch {
		case bytes.HasPrefix(head, gzipMagic):
			comp = compGzip
		case bytes.HasPrefix(head, zstdMagic) || isSkippableFrame(head):
			comp = compZstd
		default:
			comp = compNone
		}
		d.comp = comp
	} else if err := d.checkMagic(); err != nil {
		return err
	}
	if f, ok := d.closer.(io.ReadSeeker); ok && d.resync && comp == compGzip {
		if _, err := f.Seek(0, io.SeekStart); err != nil { // undo the sniffing
			return err
		}
		d.r = newMemberReader(f, d.size)
		return nil
	}
	switch comp {
	case compGzip:
		start := d.offset()
		gz, err := gzip.NewReader(d.br)
		if err == io.EOF { // an empty file: no documents
			d.r = eofReader{}
			return nil
		}
		if err != nil {
			return d.wrap(err)
		}
		// Member by member (read), so that each member's start is known
		// (mark): a reader may start at one (Position).
		gz.Multistream(false)
		d.gz, d.r = gz, gz
		d.mark(start, d.out)
	case compZstd:
		d.mark(d.offset(), d.out)
		d.frames = newZstdFrameReader(d.br)
		d.frames.pos = d.offset() // a reader may start at a frame (Position)
		zd, err := zstd.NewReader(d.frames,
			zstd.WithDecoderConcurrency(d.zstdConcurrency), // 2: decodes blocks ahead of the reader
			zstd.WithDecoderMaxWindow(1<<27),
			zstd.WithDecoderMaxMemory(1<<32))
		if err != nil {
			return d.wrap(err)
		}
		d.zd, d.r = zd, zd
	default:
		d.r = d.br
	}
	return nil
}

// checkMagic refuses a file whose name says gzip or zstd but whose first
// bytes say otherwise (a .jsonl.zst that is really gzip), naming what it
// looks like instead; an empty file passes (it holds no documents).
func (d *decoder) checkMagic() error {
	if d.comp != compGzip && d.comp != compZstd {
		return nil // a plain file read from a Position (openAt)
	}
	head, _ := d.br.Peek(512)
	if len(head) == 0 {
		return nil
	}
	magic := gzipMagic
	if d.comp == compZstd {
		magic = zstdMagic
		if isSkippableFrame(head) {
			return nil
		}
	}
	if bytes.HasPrefix(head, magic) || len(head) < len(magic) && bytes.HasPrefix(magic, head) {
		return nil // a short file is left to the decompressor ("stream truncated")
	}
	var like string
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		like = "it starts like gzip: name it .gz"
	case bytes.HasPrefix(head, zstdMagic) || isSkippableFrame(head):
		like = "it starts like zstd: name it .zst"
	case startsLikeText(head):
		like = "it starts like plain text: name it without ." + map[compression]string{compGzip: "gz", compZstd: "zst"}[d.comp]
	default:
		like = fmt.Sprintf("it starts with the bytes % x", head[:min(len(head), 4)])
	}
	return &StreamError{Compression: d.comp.String(), Size: d.size, Reason: fmt.Sprintf("not %s data (%s)", d.comp, like), notCompressed: true}
}

// startsLikeText reports whether head, the start of a file, is text:
// valid UTF-8 (but for a rune cut at its end) without control characters
// other than white space.
func startsLikeText(head []byte) bool {
	for len(head) > 0 {
		r, n := utf8.DecodeRune(head)
		if r == utf8.RuneError && n <= 1 {
			return len(head) < utf8.UTFMax && !utf8.FullRune(head)
		}
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return false
		}
		head = head[n:]
	}
	return true
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// offset is the compressed offset the decompressor has consumed.
func (d *decoder) offset() int64 {
	if d.br == nil {
		return d.raw.n
	}
	return d.raw.n - int64(d.br.Buffered())
}

// wrap turns a decoder error into a *StreamError, unless it came from the
// file itself.
func (d *decoder) wrap(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if d.raw.err != nil && errors.Is(err, d.raw.err) {
		return err
	}
	e := &StreamError{Compression: d.comp.String(), Offset: d.offset(), Size: d.size}
	if d.frames != nil {
		e.Offset = d.frames.start
	}
	if err == io.ErrUnexpectedEOF {
		e.Reason, e.truncated = "stream truncated", true
	} else {
		e.Reason = strings.TrimPrefix(strings.TrimPrefix(err.Error(), d.comp.String()), ": ")
	}
	return e
}

func (d *decoder) Read(p []byte) (int, error) {
	if d.ahead.Len() > 0 {
		n, _ := d.ahead.Read(p)
		return n, nil
	}
	if err := d.aheadErr; err != nil {
		d.aheadErr = nil
		return 0, err // sticky in d.err too, unless it is a gap
	}
	return d.read(p)
}

func (d *decoder) read(p []byte) (int, error) {
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
	for err == io.EOF && d.gz != nil {
		// A gzip member ended: is there another? As the multistream
		// reader does, the member's last data comes with the error of
		// the header after it, if any.
		d.mark(d.offset(), d.out+int64(n)) // n is counted below
		if d.firstEnd.at == 0 {
			d.firstEnd = streamMark{at: d.offset(), out: d.out + int64(n)}
		}
		if err = d.gz.Reset(d.br); err != nil {
			break // io.EOF: no other member
		}
		d.gz.Multistream(false)
		if n > 0 {
			break
		}
		n, err = d.r.Read(p)
	}
	for err == io.EOF && n == 0 && d.frames != nil && !d.frames.end {
		// A zstd frame ended: the decoder starts again on the next.
		d.frames.next()
		d.mark(d.frames.pos, d.out)
		if err = d.zd.Reset(d.frames); err == nil {
			n, err = d.r.Read(p)
		}
	}
	d.out += int64(n)
	if err == io.EOF && n > 0 && d.frames != nil && !d.frames.end {
		err = nil // the next Read goes on with the next frame
	}
	if err != nil && !errors.Is(err, errGzipGap) { // after a gap, reading goes on
		if err != io.EOF && !errors.Is(err, ErrCorrupt) {
			err = d.wrap(err)
		}
		d.err = err
	}
	return n, err
}

// verify checks the integrity of the compressed stream ahead of the
// reader before a bad record is reported: garbage from a damaged stream
// often decodes as text first, and its checksum fails only at the end of
// the gzip member or zstd frame. It decompresses up to maxVerifyAhead
// bytes ahead (kept for later Reads) and returns the stream's error, if
// one comes within that distance. Plain input has nothing to verify.
func (d *decoder) verify() error {
	if d.comp == compNone || d.r == nil {
		return nil
	}
	if d.aheadErr != nil && d.aheadErr != io.EOF {
		return d.aheadErr
	}
	var buf [32 << 10]byte
	for d.aheadErr == nil && d.ahead.Len() < maxVerifyAhead {
		n, err := d.read(buf[:])
		d.ahead.Write(buf[:n])
		d.aheadErr = err
	}
	err := d.aheadErr
	switch {
	case err == io.EOF:
		return nil
	case errors.Is(err, errGzipGap):
		d.aheadErr = nil // reported now; reading goes on after the data ahead
	}
	return err
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
	return CompressionRatioOf(io.LimitReader(f, headBytes)), nil
}

// CompressionRatioOf estimates how many times larger the start of a
// stream, head, is once decompressed (1 when it is not gzip or zstd).
func CompressionRatioOf(head io.Reader) float64 {
	return readHead(head).ratio()
}

// headBytes is the start of a file that CompressionRatio and GzipSize
// decode.
const headBytes = 4 << 20

// maxHeadDecoded bounds what is decoded of a head (a 4 MiB head of a
// highly compressible file would otherwise decode to gigabytes).
const maxHeadDecoded = 1 << 30

// streamHead is what decoding the start of a stream tells: the ratio
// (CompressionRatioOf) and, for gzip, where the first member ended
// (GzipSize). Both come from one decoding.
type streamHead struct {
	comp   compression
	n, off int64 // decompressed bytes, and the compressed bytes they came from
	// firstEnd is where the first gzip member ended (decoder.firstEnd):
	// at is 0 when it did not end within the head.
	firstEnd streamMark
	// truncated: the decoding stopped inside a member or frame because
	// the head ended there (or the stream is cut short), not at damage.
	truncated bool
}

// readHead decodes head, the start of a stream, up to maxHeadDecoded
// bytes.
func readHead(head io.Reader) streamHead {
	d := newDecoder(io.NopCloser(head), compSniff)
	n, err := io.Copy(io.Discard, io.LimitReader(d, maxHeadDecoded)) // a cut stream ends in an error: fine
	var se *StreamError
	return streamHead{
		comp:      d.comp,
		n:         n,
		off:       d.offset(),
		firstEnd:  d.firstEnd,
		truncated: errors.As(err, &se) && se.truncated,
	}
}

// ratio is how many times larger the head is decompressed (1 when it is
// not gzip or zstd, or nothing was decoded).
func (h streamHead) ratio() float64 {
	if h.comp == compNone || h.off <= 0 || h.n == 0 {
		return 1
	}
	return float64(h.n) / float64(h.off)
}
