package corpus

import (
	"bufio"
	"bytes"
	"io"
)

// lineReader reads lines with a size limit. It is shared by the JSONL and
// plain-text readers.
type lineReader struct {
	r     *bufio.Reader
	max   int
	off   int64 // offset of the next line in the decoded stream
	start int64 // offset of the line in buf
	line  int64 // 1-based number of the line in buf
	// buf is the line: in r's buffer when the line lies there whole,
	// else in own, where its pieces are gathered.
	buf []byte
	own []byte
	// length is the length of the line in buf without its terminator,
	// also when next returned ErrTooLarge (buf is then empty).
	length int64
	// skip is the bytes to discard before the first line (a reader that
	// starts at a Position inside a gzip member or zstd frame).
	skip int64
}

func newLineReader(r io.Reader, max int) lineReader {
	return lineReader{r: bufio.NewReaderSize(r, 1<<20), max: max}
}

// next reads the next line into l.buf without its line terminator (\n or
// \r\n); l.buf is valid until the next call. It returns io.EOF at the
// end, ErrTooLarge (after skipping to the end of the line) for a line
// over the limit, and any other read error as is; a partial line before
// a read error is dropped.
func (l *lineReader) next() error {
	if l.skip > 0 {
		// An error (the input changed since the Position was taken)
		// comes again from the next read.
		l.r.Discard(int(l.skip))
		l.skip = 0
	}
	l.start = l.off
	chunk, err := l.r.ReadSlice('\n')
	if err == nil && len(chunk) <= l.max+2 { // +2 for "\r\n"
		// The whole line lies in r's buffer: no copy.
		l.off += int64(len(chunk))
		return l.done(chunk, false)
	}
	l.own = l.own[:0]
	tooLarge := false
	var prev byte // the byte before chunk, for a "\r\n" split between chunks
	for {
		l.off += int64(len(chunk))
		if !tooLarge {
			if len(l.own)+len(chunk) > l.max+2 {
				tooLarge = true
				l.own = l.own[:0]
			} else {
				l.own = append(l.own, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			prev = chunk[len(chunk)-1]
			chunk, err = l.r.ReadSlice('\n')
			continue
		case err == io.EOF:
			if l.off == l.start {
				l.buf = l.own
				return io.EOF
			}
		case err != nil:
			l.line++
			l.buf = l.own
			return err
		}
		break
	}
	if tooLarge {
		// The line's length is what was read, less its terminator.
		l.length = l.off - l.start
		if bytes.HasSuffix(chunk, []byte{'\n'}) {
			l.length--
			if len(chunk) > 1 && chunk[len(chunk)-2] == '\r' || len(chunk) == 1 && prev == '\r' {
				l.length--
			}
		}
	}
	return l.done(l.own, tooLarge)
}

// done ends next with the line b, terminator included.
func (l *lineReader) done(b []byte, tooLarge bool) error {
	l.line++
	b = bytes.TrimSuffix(b, []byte{'\n'})
	l.buf = bytes.TrimSuffix(b, []byte{'\r'})
	if !tooLarge {
		l.length = int64(len(l.buf))
	}
	if tooLarge || len(l.buf) > l.max {
		return ErrTooLarge
	}
	return nil
}

// tooLarge is the error for the line next refused with ErrTooLarge.
func (l *lineReader) tooLarge() error {
	return &SizeError{Length: l.length, Limit: l.max}
}

// whole appends to dst the whole lines in r's buffer, up to max bytes (at
// least one line), and takes them as read; false when the buffer holds no
// whole line. It reads nothing.
func (l *lineReader) whole(dst []byte, max int) ([]byte, bool) {
	p, _ := l.r.Peek(l.r.Buffered()) // no read: the bytes are buffered
	n := bytes.LastIndexByte(p[:min(len(p), max)], '\n') + 1
	if n == 0 {
		if n = bytes.IndexByte(p, '\n') + 1; n == 0 {
			return dst, false
		}
	}
	p = p[:n]
	dst = append(dst, p...)
	l.line += int64(bytes.Count(p, []byte{'\n'}))
	l.off += int64(n)
	l.r.Discard(n)
	return dst, true
}
