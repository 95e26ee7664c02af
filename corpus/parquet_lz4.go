package corpus

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	pqformat "github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// hasLZ4Raw reports whether a column chunk of f is compressed with
// LZ4_RAW.
func hasLZ4Raw(f *parquet.File) bool {
	for _, rg := range f.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec == pqformat.Lz4Raw {
				return true
			}
		}
	}
	return false
}

// decodeLZ4Raw writes to dst a copy of the Parquet file in (of size
// bytes, with metadata md) in which every LZ4_RAW column chunk is stored
// uncompressed, and returns the copy's size. parquet-go v0.32.0 reads
// LZ4_RAW pages wrongly (Column.decompress keeps its page buffer when the
// LZ4 codec decoded into a new one, so a page compressed less than about
// 3x reads as the buffer's old contents) and doubles its buffer without
// end on a corrupt block; here each block is decoded once into a buffer
// of the size its page header declares (maxPageBytes at most), and a
// block that does not fill it exactly is ErrCorrupt. Other chunks are
// copied unchanged. The page indexes and Bloom filters are left out (the
// reader skips them) and page checksums of decoded pages are dropped.
func decodeLZ4Raw(in io.ReaderAt, size int64, md *pqformat.FileMetaData, dst io.Writer) (int64, error) {
	w := &countWriter{w: bufio.NewWriterSize(dst, 1<<16)}
	w.Write([]byte("PAR1"))
	var proto thrift.CompactProtocol
	var hb, src, out []byte
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		rgStart := w.n
		for j := range rg.Columns {
			c := &rg.Columns[j]
			m := &c.MetaData
			if c.FilePath != "" || len(c.EncryptedColumnMetadata) > 0 {
				return 0, fmt.Errorf("%w %v in row group %d column %d: the chunk is in another file or encrypted",
					ErrUnsupportedCodec, m.Codec, i, j)
			}
			start := m.DataPageOffset
			if m.DictionaryPageOffset > 0 && m.DictionaryPageOffset < start {
				start = m.DictionaryPageOffset
			}
			if m.TotalCompressedSize < 0 || start < 0 || start > size-m.TotalCompressedSize {
				return 0, fmt.Errorf("%w: parquet: row group %d column %d: invalid sizes (compressed %d, offset %d)",
					ErrCorrupt, i, j, m.TotalCompressedSize, start)
			}
			newStart := w.n
			if m.Codec != pqformat.Lz4Raw {
				if _, err := io.Copy(w, io.NewSectionReader(in, start, m.TotalCompressedSize)); err != nil {
					return 0, err
				}
				shift := newStart - start
				m.DataPageOffset += shift
				if m.DictionaryPageOffset > 0 {
					m.DictionaryPageOffset += shift
				}
			} else {
				first := true
				m.DictionaryPageOffset = 0
				for off := start; off < start+m.TotalCompressedSize; {
					// Decode the header from a bounded buffer: the streaming
					// decoder allocates the lengths it reads first.
					hb = grow(hb, int(min(start+m.TotalCompressedSize-off, maxPageHeader)))
					if k, err := in.ReadAt(hb, off); k < len(hb) {
						return 0, fmt.Errorf("%w: parquet: row group %d column %d: page header at offset %d: %v", ErrCorrupt, i, j, off, err)
					}
					var h pqformat.PageHeader
					r := proto.NewReaderFromBytes(hb)
					if err := thrift.NewDecoder(r).Decode(&h); err != nil {
						return 0, fmt.Errorf("%w: parquet: row group %d column %d: page header at offset %d: %v", ErrCorrupt, i, j, off, err)
					}
					data := off + int64(r.BytesRead())
					if h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > start+m.TotalCompressedSize-data ||
						h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes {
						return 0, fmt.Errorf("%w: parquet: row group %d column %d: page at offset %d: invalid sizes (compressed %d, uncompressed %d)",
							ErrCorrupt, i, j, off, h.CompressedPageSize, h.UncompressedPageSize)
					}
					if src = grow(src, int(h.CompressedPageSize)); len(src) > 0 {
						if k, err := in.ReadAt(src, data); k < len(src) {
							return 0, fmt.Errorf("%w: parquet: row group %d column %d: page at offset %d: %v", ErrCorrupt, i, j, off, err)
						}
					}
					// A data page v2 keeps its levels uncompressed before
					// the values, and may not be compressed at all.
					levels, compressed := 0, true
					if v2 := &h.DataPageHeaderV2; v2.Valid {
						levels = int(v2.V.DefinitionLevelsByteLength) + int(v2.V.RepetitionLevelsByteLength)
						compressed = !v2.V.IsCompressed.Valid || v2.V.IsCompressed.V
						v2.V.IsCompressed = thrift.New(false)
					}
					if levels < 0 || levels > len(src) || levels > int(h.UncompressedPageSize) {
						return 0, fmt.Errorf("%w: parquet: row group %d column %d: page at offset %d: invalid level lengths", ErrCorrupt, i, j, off)
					}
					page := src
					if compressed {
						out = grow(out, int(h.UncompressedPageSize))
						copy(out, src[:levels])
						k, err := lz4.UncompressBlock(src[levels:], out[levels:])
						if err != nil || levels+k != len(out) {
							return 0, fmt.Errorf("%w: parquet: row group %d column %d: page at offset %d: its LZ4_RAW block does not decode to the %d bytes the page declares",
								ErrCorrupt, i, j, off, h.UncompressedPageSize)
						}
						page = out
					}
					h.CompressedPageSize, h.UncompressedPageSize, h.CRC = int32(len(page)), int32(len(page)), 0
					b, err := thrift.Marshal(&proto, &h)
					if err != nil {
						return 0, err
					}
					switch {
					case h.Type == pqformat.DictionaryPage:
						m.DictionaryPageOffset = w.n
					case first:
						m.DataPageOffset, first = w.n, false
					}
					w.Write(b)
					w.Write(page)
					off = data + int64(len(src))
				}
				m.Codec = pqformat.Uncompressed
				m.TotalUncompressedSize = w.n - newStart
			}
			m.TotalCompressedSize = w.n - newStart
			m.IndexPageOffset, m.BloomFilterOffset, m.BloomFilterLength = 0, 0, 0
			c.FileOffset = 0
			c.OffsetIndexOffset, c.OffsetIndexLength, c.ColumnIndexOffset, c.ColumnIndexLength = 0, 0, 0, 0
		}
		rg.FileOffset, rg.TotalCompressedSize = rgStart, w.n-rgStart
	}
	foot, err := thrift.Marshal(&proto, md)
	if err != nil {
		return 0, err
	}
	w.Write(foot)
	w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(foot))))
	w.Write([]byte("PAR1"))
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.n, w.err
}

// grow returns b resized to n bytes, reallocated when too small.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// countWriter counts what it writes and keeps the first error.
type countWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// openDecodedLZ4Raw decodes the LZ4_RAW chunks of f (read from in) into
// an unnamed temporary file (removed at once: it lives while open) and
// returns it with its size.
func openDecodedLZ4Raw(in io.ReaderAt, size int64, f *parquet.File) (*os.File, int64, error) {
	tmp, err := os.CreateTemp("", "neardup-lz4raw-*.parquet")
	if err != nil {
		return nil, 0, err
	}
	os.Remove(tmp.Name())
	md := *f.Metadata() // decodeLZ4Raw rewrites offsets: work on a copy
	md.RowGroups = cloneRowGroups(md.RowGroups)
	n, err := decodeLZ4Raw(in, size, &md, tmp)
	if err != nil {
		tmp.Close()
		return nil, 0, err
	}
	return tmp, n, nil
}

func cloneRowGroups(rgs []pqformat.RowGroup) []pqformat.RowGroup {
	out := make([]pqformat.RowGroup, len(rgs))
	for i, rg := range rgs {
		out[i] = rg
		out[i].Columns = append([]pqformat.ColumnChunk(nil), rg.Columns...)
	}
	return out
}
