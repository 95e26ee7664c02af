package dedup

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/internal/tempfile"
)

// StdinStats says how standard input was read.
type StdinStats struct {
	// Bytes is what was read from standard input, as it came (compressed
	// or not).
	Bytes int64 `json:"bytes"`
	// SpoolBytes is the size of the copy kept in Outputs.TmpDir for the
	// passes after the first (zstd, or the input's own gzip or zstd);
	// 0 when the run reads its input once, or the input is empty.
	SpoolBytes int64 `json:"spool_bytes"`
}

// stdinPeek is how much of standard input the memory plan samples.
const stdinPeek = 1 << 20

// stdin is standard input as the passes of a run read it: the first pass
// streams it, and when a later pass will read it again, tees it into a
// spooled copy that later passes read instead.
type stdin struct {
	r      *bufio.Reader // the stream, buffered so the plan can peek at it
	reads  int           // passes that have opened it
	spool  string        // the copy, "" when there is none
	stats  StdinStats
	tmpDir string
	size   int64 // what is left to read, when known (a regular file, an in-memory reader); else -1
	// file is standard input redirected from a regular file, which later
	// passes read again from start instead of a copy.
	file  *os.File
	start int64
}

func newStdin(r io.Reader, tmpDir string) *stdin {
	if r == nil {
		r = os.Stdin
	}
	s := &stdin{r: bufio.NewReaderSize(r, stdinPeek), tmpDir: tmpDir, size: -1}
	switch v := r.(type) {
	case *os.File: // redirected from a file: < docs.jsonl
		if st, err := v.Stat(); err == nil && st.Mode().IsRegular() {
			if off, err := v.Seek(0, io.SeekCurrent); err == nil {
				s.size, s.file, s.start = st.Size()-off, v, off
			}
		}
	case interface{ Len() int }: // bytes.Reader, strings.Reader
		s.size = int64(v.Len())
	}
	return s
}

// peek returns the first bytes of the stream without consuming them.
func (s *stdin) peek() []byte {
	b, _ := s.r.Peek(stdinPeek)
	return b
}

// open returns a reader over the documents of standard input. The first
// call reads the stream itself, keeping a copy when again is true; later
// calls read the copy (or the redirected file again, from where it
// started).
func (s *stdin) open(opts corpus.Options, again bool) (corpus.Reader, error) {
	s.reads++
	if s.reads > 1 && s.file != nil {
		if _, err := s.file.Seek(s.start, io.SeekStart); err != nil {
			return nil, err
		}
		return &stdinReader{Reader: corpus.NewStream(s.file, "-", opts), close: func() error { return nil }}, nil
	}
	if s.reads > 1 {
		if s.spool == "" {
			return nil, errors.New("standard input was read once already and not kept")
		}
		f, err := os.Open(s.spool)
		if err != nil {
			return nil, err
		}
		return &stdinReader{Reader: corpus.NewStream(f, "-", opts), close: f.Close}, nil
	}
	src := &countReader{r: s.r, n: &s.stats.Bytes}
	if !again || s.file != nil {
		return &stdinReader{Reader: corpus.NewStream(src, "-", opts), close: func() error { return nil }}, nil
	}
	f, err := tempfile.Create(s.tmpDir, stdinPrefix, stdinSuffix)
	if err != nil {
		return nil, err
	}
	s.spool = f.Name()
	file := &countWriter{w: f, n: &s.stats.SpoolBytes}
	// Data that is compressed already is kept as it is; plain data is
	// compressed at zstd's fastest level.
	head, _ := s.r.Peek(4)
	var w io.Writer = file
	var enc *zstd.Encoder
	if !bytes.HasPrefix(head, []byte{0x1f, 0x8b}) && !bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		enc, err = zstd.NewWriter(file, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(2))
		if err != nil {
			f.Close()
			return nil, err
		}
		w = enc
	}
	tee := &teeReader{r: src, w: w}
	done := func() error {
		// The reader may stop before the end (at damage it skips): the
		// copy holds what it read, which is what a later pass reads.
		err := tee.err
		if enc != nil {
			if cerr := enc.Close(); err == nil {
				err = cerr
			}
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if s.stats.Bytes == 0 {
			// An empty input: the copy is zstd's empty frame (13 bytes),
			// nothing of the input's.
			s.stats.SpoolBytes = 0
		}
		return err
	}
	return &stdinReader{Reader: corpus.NewStream(tee, "-", opts), close: done}, nil
}

// remove deletes the copy.
func (s *stdin) remove() {
	if s.spool != "" {
		os.Remove(s.spool)
	}
}

// stdinReader closes what the stream needs closed with the reader.
type stdinReader struct {
	corpus.Reader
	close func() error
}

func (r *stdinReader) Close() error {
	err := r.Reader.Close()
	if cerr := r.close(); err == nil {
		err = cerr
	}
	return err
}

// teeReader copies what is read to w; a write error is kept for Close and
// ends reading.
type teeReader struct {
	r   io.Reader
	w   io.Writer
	err error
}

func (t *teeReader) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n, err := t.r.Read(p)
	if n > 0 {
		if _, werr := t.w.Write(p[:n]); werr != nil {
			t.err = werr
			return n, werr
		}
	}
	return n, err
}

type countReader struct {
	r io.Reader
	n *int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

type countWriter struct {
	w io.Writer
	n *int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}
