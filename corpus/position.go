package corpus

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/neardup/neardup/internal/human"
	"github.com/neardup/neardup/internal/objstore"
)

// Position is a place in a JSONL or text file where a reader can start
// reading (Options.Start) instead of at the file's start, as if it had
// read everything before: the line numbers, the documents' offsets and
// the errors are those of a reader of the whole file. It is the start of
// a line, found by a reader of the whole file (JSONL.Position,
// Lines.Position), and is only valid for that file as it was then.
//
// A plain file can start at any line. A compressed one starts at a gzip
// member or zstd frame and decompresses from there to the line: a file
// of many members or frames (bgzip, pzstd, zstd -B, the seekable zstd
// format, neardup's own .zst outputs of 4 MiB frames) has Positions all
// along, a single-member gzip or single-frame zstd file only at its
// start.
type Position struct {
	// Line is the number of the line before (the first line read is
	// Line+1) and Offset the decompressed byte offset of the line.
	Line   int64 `json:"line"`
	Offset int64 `json:"offset"`
	// At is the byte offset in the file where reading starts: Offset for
	// a plain file, the gzip member's or zstd frame's start for a
	// compressed one, whose first Skip decompressed bytes come before the
	// line.
	At   int64 `json:"at"`
	Skip int64 `json:"skip,omitempty"`
	// Compression is the file's: "gzip", "zstd" or "" for none.
	Compression string `json:"compression,omitempty"`
	// Size is the file's size in bytes when the Position was taken (an
	// object's as its download's answer said it), 0 when not known: a
	// file or object of another size is refused, not read from a place
	// that is no longer a line's start.
	Size int64 `json:"size,omitempty"`
}

// position is the Position of the next line of l, read from src (the
// reader's decoder), or false where it is not known.
func position(l *lineReader, src io.Closer) (Position, bool) {
	d, ok := src.(*decoder)
	if !ok || d.r == nil || d.resync {
		return Position{}, false
	}
	p := Position{Line: l.line, Offset: l.off, At: l.off, Size: max(d.size, 0)}
	if d.comp == compNone {
		return p, true
	}
	m, ok := d.markAt(l.off)
	if !ok {
		return Position{}, false
	}
	p.At, p.Skip, p.Compression = m.at, l.off-m.out, d.comp.String()
	return p, true
}

// Position is where a reader can start (Options.Start) to read what this
// one reads after the document Next returned last: the line after that
// document's, blank and bad lines after it included. false when it is
// not known: before the first document, on standard input, or where the
// compressed stream's member or frame is not known.
func (j *JSONL) Position() (Position, bool) {
	if j.err != nil || j.lines.line == 0 {
		return Position{}, false
	}
	return position(&j.lines, j.closer)
}

// Position is JSONL.Position for plain text.
func (t *Lines) Position() (Position, bool) {
	if t.err != nil || t.lines.line == 0 {
		return Position{}, false
	}
	return position(&t.lines, t.closer)
}

// openAt opens the file name (a path, or an object-storage URL read from
// p.At with a ranged read) for a reader that starts at p, of version want
// when it is not the zero Version.
func openAt(name string, f format, p Position, want Version) (*decoder, error) {
	var comp compression
	switch p.Compression {
	case "":
		comp = compNone
	case "gzip":
		comp = compGzip
	case "zstd":
		comp = compZstd
	default:
		return nil, fmt.Errorf("%s: a start position of compression %q", name, p.Compression)
	}
	if f != formatJSONL && f != formatLines || p.At < 0 || p.Skip < 0 || p.Line < 0 || p.Offset < p.Skip || p.Size < 0 {
		return nil, fmt.Errorf("%s: cannot start reading at %+v (JSONL and text files only)", name, p)
	}
	if objstore.IsURL(name) {
		body, err := objstore.OpenURLAt(context.Background(), name, p.At)
		if err != nil {
			return nil, err
		}
		dec := newDecoder(body, comp)
		dec.size = objstore.Size(body) // the whole object's, as a local file's
		dec.version = versionOf(body)
		if err := sameContent(name, dec, p, want); err != nil {
			body.Close()
			return nil, err
		}
		dec.raw.n, dec.out = p.At, p.Offset-p.Skip
		return dec, nil
	}
	file, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if _, err := file.Seek(p.At, io.SeekStart); err != nil {
		file.Close()
		return nil, err
	}
	dec := newDecoder(file, comp)
	if st, err := file.Stat(); err == nil && st.Mode().IsRegular() {
		dec.size = st.Size()
	}
	dec.version = versionOf(file)
	if err := sameContent(name, dec, p, want); err != nil {
		file.Close()
		return nil, err
	}
	dec.raw.n, dec.out = p.At, p.Offset-p.Skip
	return dec, nil
}

// sameContent refuses the file name that dec reads when its size is not
// p's or its version not want.
func sameContent(name string, dec *decoder, p Position, want Version) error {
	if err := sameSize(name, dec.size, p); err != nil {
		return err
	}
	return sameVersion(name, dec.version, want)
}

// sameSize refuses the file name, of size bytes now, when p recorded
// another size: a line written before p moved every line after it.
func sameSize(name string, size int64, p Position) error {
	if p.Size > 0 && size != p.Size {
		return fmt.Errorf("%s: %s bytes, where it had %s when its documents were counted: the file changed since then (a staged job's input must not change until the job is done)", name, human.Number(size), human.Number(p.Size))
	}
	return nil
}

// startAt sets l to read from p (the decoder's file is at p.At).
func (l *lineReader) startAt(p Position) {
	l.off, l.line, l.skip = p.Offset, p.Line, p.Skip
}
