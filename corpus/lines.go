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
	buf   []byte
}

func newLineReader(r io.Reader, max int) lineReader {
	return lineReader{r: bufio.NewReaderSize(r, 1<<20), max: max}
}

// next reads the next line into l.buf without its line terminator (\n or
// \r\n). It returns io.EOF at the end, ErrTooLarge (after skipping to the
// end of the line) for a line over the limit, and any other read error
// as is; a partial line before a read error is dropped.
func (l *lineReader) next() error {
	l.buf = l.buf[:0]
	l.start = l.off
	tooLarge := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.off += int64(len(chunk))
		if !tooLarge {
			if len(l.buf)+len(chunk) > l.max+2 { // +2 for "\r\n"
				tooLarge = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if l.off == l.start {
				return io.EOF
			}
		case err != nil:
			l.line++
			return err
		}
		break
	}
	l.line++
	l.buf = bytes.TrimSuffix(l.buf, []byte{'\n'})
	l.buf = bytes.TrimSuffix(l.buf, []byte{'\r'})
	if tooLarge || len(l.buf) > l.max {
		return ErrTooLarge
	}
	return nil
}
