package corpus

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
)

// zstdFrameReader passes on the compressed bytes of one zstd frame at a
// time and ends (io.EOF) where the frame ends, so that the decoder, which
// reads blocks ahead of its reader on a goroutine of its own
// (WithDecoderConcurrency(2)), never reads into the next frame. The
// decoder is reset for each frame (decoder.read), and a damaged frame is
// reported by the offset where it starts: how far the decoder had read
// when the damage surfaced varies from run to run, the frame does not.
//
// It follows the frame format (RFC 8878) only as far as finding where a
// frame ends: frame header, block headers and sizes, checksum, skippable
// frames. What it cannot follow (a reserved bit or block type, a bad
// magic number, too few bytes) it passes on to the end of the stream, and
// the decoder reports it, in the frame that starts there.
type zstdFrameReader struct {
	br    *bufio.Reader
	pos   int64 // compressed offset of the next byte
	start int64 // compressed offset of the current frame
	left  int64 // bytes of the current part still to pass on
	state uint8
	last  bool // the current block is the frame's last
	sum   bool // the frame ends in a checksum
	end   bool // the stream ended where a frame would start
}

const (
	zsFrame   = iota // a frame starts at pos
	zsBlock          // a block header (or the end of the frame) is at pos
	zsDone           // the frame has been passed on
	zsThrough        // everything to the end of the stream
)

func newZstdFrameReader(br *bufio.Reader) *zstdFrameReader {
	return &zstdFrameReader{br: br}
}

// next moves on to the frame after the one passed on.
func (z *zstdFrameReader) next() { z.state, z.left = zsFrame, 0 }

func (z *zstdFrameReader) Read(p []byte) (int, error) {
	for z.left == 0 {
		switch z.state {
		case zsFrame:
			z.startFrame()
		case zsBlock:
			z.startBlock()
		default:
			return 0, io.EOF
		}
		if z.end {
			return 0, io.EOF
		}
	}
	if int64(len(p)) > z.left {
		p = p[:z.left]
	}
	n, err := z.br.Read(p)
	z.pos += int64(n)
	z.left -= int64(n)
	return n, err
}

// through passes on the rest of the stream.
func (z *zstdFrameReader) through() { z.state, z.left = zsThrough, math.MaxInt64 }

func (z *zstdFrameReader) startFrame() {
	z.start = z.pos
	head, _ := z.br.Peek(5)
	switch {
	case len(head) == 0:
		z.end, z.state = true, zsDone
		return
	case isSkippableFrame(head):
		h, _ := z.br.Peek(8)
		if len(h) < 8 {
			z.through()
			return
		}
		z.state, z.left = zsDone, 8+int64(binary.LittleEndian.Uint32(h[4:]))
		return
	case len(head) < 5 || string(head[:4]) != string(zstdMagic) || head[4]&(1<<3) != 0:
		z.through()
		return
	}
	fhd := head[4]
	single := fhd&(1<<5) != 0
	size := int64(5)
	if !single {
		size++ // window descriptor
	}
	size += [4]int64{0, 1, 2, 4}[fhd&3] // dictionary id
	switch fhd >> 6 {                   // frame content size
	case 0:
		if single {
			size++
		}
	case 1:
		size += 2
	case 2:
		size += 4
	case 3:
		size += 8
	}
	z.sum, z.last = fhd&(1<<2) != 0, false
	z.state, z.left = zsBlock, size
}

func (z *zstdFrameReader) startBlock() {
	if z.last {
		z.state = zsDone
		if z.sum {
			z.left = 4
		}
		return
	}
	h, _ := z.br.Peek(3)
	if len(h) < 3 {
		z.through()
		return
	}
	bh := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
	z.last = bh&1 != 0
	size := int64(bh >> 3)
	switch (bh >> 1) & 3 {
	case 1: // RLE: one byte repeated size times
		size = 1
	case 3: // reserved
		z.through()
		return
	}
	z.left = 3 + size
}

// isSkippableFrame reports whether head starts with the magic number of a
// zstd skippable frame (0x184D2A50 to 0x184D2A5F, little-endian), which
// may come before a stream's first frame (metadata, seek tables).
func isSkippableFrame(head []byte) bool {
	return len(head) >= 4 && head[0]&0xf0 == 0x50 && string(head[1:4]) == "\x2a\x4d\x18"
}
